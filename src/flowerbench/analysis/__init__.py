"""The analysis of measured rounds: the reader, the estimators, the statistics, the variance pooled
over references, metrics (every number the report prints) and the A/B.  No measuring stage imports
it."""
