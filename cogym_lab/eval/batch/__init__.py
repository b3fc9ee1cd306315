"""Running a batch: one team on many instances of a task (:mod:`.runner`), each session planned
(:mod:`.plan`), seeded (:mod:`.seeds`), counted and priced (:mod:`.progress`) and kept in its
folder (:mod:`.sessions`), the run written down in its manifest (:mod:`.manifest`) under the
provider limits of its team (:mod:`.limits`); where sessions run (:mod:`.engines`); and the noise
study, which runs sessions again to split run-to-run noise (:mod:`.noise`).
"""
