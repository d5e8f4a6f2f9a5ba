"""Gates for CI: budgets on a run's figures against absolute limits or a stored baseline (budget.py),
the figures' names and where each summary kind keeps them (figures.py), stored summaries read back
(stored.py), a baseline's configuration checked (identity.py), the verdicts (verdict.py) and their table (text.py).
Headless: reads JSON summaries and typed figures, never runs anything (docs/gates.md)."""
