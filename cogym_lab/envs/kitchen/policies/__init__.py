"""Playing the kitchen without an LM: the game state as the paper's agents read it
(``situation``), the rule-based partners, the FSM that DPT-Agent's System 1 steers, the headless
player for benchmarks and tests, and their member types."""
