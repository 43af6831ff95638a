//! The false-sharing finding's figures: a wait site that spins on a line the sharing
//! detector judged suspicious (`analysis::findings` makes them findings).

use crate::model::profile::Profile;

/// A wait site spinning on a suspicious line: the finding's subject, evidence and fix.
pub(crate) struct SharedSpin {
    pub(crate) subject: String,
    pub(crate) evidence: String,
    pub(crate) fix: String,
}

/// One per wait site and suspicious line it spins on.
pub(crate) fn shared_spins(profile: &Profile) -> Vec<SharedSpin> {
    let mut out = Vec::new();
    for line in profile
        .sharing()
        .iter()
        .filter(|l| l.verdict.is_suspicious())
    {
        let fields: Vec<String> = line
            .words
            .iter()
            .map(|w| format!("`{}` +{}", w.name, w.offset))
            .collect();
        for spinner in &line.wait_sites {
            out.push(SharedSpin {
                subject: spinner.name.clone(),
                evidence: format!(
                    "spins on the {}-B line at {:#x} ({}), {}: {} invalidations, {} between \
                     different bytes; {} reads inside its episodes",
                    line.size,
                    line.address,
                    fields.join(", "),
                    line.verdict,
                    line.invalidations,
                    line.false_invalidations,
                    spinner.reads
                ),
                fix: format!(
                    "{}; tuning this site's spin is useless while its line ping-pongs",
                    line.fix
                ),
            });
        }
    }
    out
}
