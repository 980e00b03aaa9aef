//! The reference HTTP target that dyno's load tests and its own tests aim at
