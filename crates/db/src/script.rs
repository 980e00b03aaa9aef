//! pgbench's script language: parsing and evaluation.
