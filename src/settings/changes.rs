//! `dyno changes`: the flags as the analysis's settings.

use dyno_stats::changes::Settings;

use crate::cli::ChangesArgs;

/// The analysis `args` ask for (every value is checked by its parser).
pub(crate) fn changes(args: &ChangesArgs) -> Settings {
    Settings {
        alpha: args.alpha,
        min_change: args.min_change / 100.0,
        min_segment: args.min_segment as usize,
        seed: args.seed,
        ..Settings::default()
    }
}
