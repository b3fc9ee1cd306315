"""Shared fixtures: real services started by the tests themselves."""

import signal

pytest_plugins = ["tests.support.redis_server", "tests.support.buses", "tests.support.lm",
                  "tests.support.data", "tests.support.comms",
                  "tests.support.server_fixtures", "tests.support.ray_cluster",
                  "tests.support.sampled_task"]

# Tests press Ctrl-C (SIGINT) in the processes they start, as a terminal would. A suite run in
# the background of a shell inherits SIGINT ignored, and every child would too (Python then
# raises no KeyboardInterrupt); a handler of our own is reset to the default in each child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
