"""The simulated-user audit: is a simulated person a fair stand-in for a real one? An LM
reviewer and programmatic checks (:mod:`.audit`, :mod:`.checks`) of what the user was given
(:mod:`.sources`), running flagged sessions again (:mod:`.rerun`), and the validation sheets
people fill in, as the Co-Gym paper did (:mod:`.simulator_validation`).
"""
