"""The kernel side: what runs in a person's notebook kernel to start and follow sessions. A
backend runs them in the Jupyter server (over its REST API) or in this kernel; the Python API
(:mod:`cogym_lab.api`) and the ``%cogym`` magics stand on it."""
