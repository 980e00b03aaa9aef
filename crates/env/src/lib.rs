//! Environment capture: the machine, its limits and the preflight checks
