"""The formulas: parameters, FLOPs, operator times, collectives, memory. Each lives here once."""
