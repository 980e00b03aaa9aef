//! Summaries, confidence intervals, tests of difference and scaling fits
