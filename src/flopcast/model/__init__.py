"""Value types of the three inputs (workload, system, strategy) and the errors they raise."""
