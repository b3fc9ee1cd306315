"""Shared fixtures: real services started by the tests themselves."""

pytest_plugins = ["tests.support.redis_server", "tests.support.buses", "tests.support.lm",
                  "tests.support.data", "tests.support.comms",
                  "tests.support.server_fixtures", "tests.support.ray_cluster",
                  "tests.support.sampled_task"]
