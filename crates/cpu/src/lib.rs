//! Built-in CPU workloads with self-checking results
