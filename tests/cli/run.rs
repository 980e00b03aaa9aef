//! `dyno run`: real child processes timed through the binary.
