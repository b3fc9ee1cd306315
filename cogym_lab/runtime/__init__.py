"""Hosted sessions: :class:`SessionHost` runs, lists, follows, resumes and rates sessions in one
event loop (a Jupyter server's, or a notebook kernel's), and keeps the records that let a later
process rebuild them. Both the server extension and the widgets stand on it."""
