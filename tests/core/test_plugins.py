"""Entry points are read once, and again as soon as a package is installed where Python looks."""

from __future__ import annotations

import os

from cogym_lab.core.plugins import installed_entry_points

GROUP = "cogym_lab.test_plugins"


def _install(site, name: str, entry: str) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{entry} = os:getcwd\n")


def test_entry_points_are_kept_until_a_package_is_installed(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    assert installed_entry_points(GROUP) == ()
    first = installed_entry_points(GROUP)
    assert installed_entry_points(GROUP) is first  # nothing changed: the same answer, not read

    _install(site, "plugin_one", "one")
    os.utime(site, ns=(1, 1))  # a folder's time changes when a package lands in it
    assert [point.name for point in installed_entry_points(GROUP)] == ["one"]

    _install(site, "plugin_two", "two")
    os.utime(site, ns=(2, 2))
    assert sorted(point.name for point in installed_entry_points(GROUP)) == ["one", "two"]
    assert installed_entry_points(GROUP)[0].load() is os.getcwd
