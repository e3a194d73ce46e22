//! The report: each configuration's runs under each fault, side by side.

use crate::run::{Fault, LibraryOutcome, Outcome, Setup};
use std::fmt::Write;
use std::time::Duration;

/// The runs of one configuration under one fault.
pub struct Cell<'a> {
    pub setup: &'a Setup,
    pub fault: Fault,
    pub runs: Vec<Outcome>,
}

/// A markdown table per measure: double grants, stale fenced writes
/// accepted, time from the fault to the first grant, grants, and the
/// rlock-client workload's stuck waiters and lost holds.
pub fn markdown(cells: &[Cell]) -> String {
    let mut setups: Vec<&Setup> = Vec::new();
    for cell in cells {
        if !setups.iter().any(|setup| setup.label == cell.setup.label) {
            setups.push(cell.setup);
        }
    }
    let faults: Vec<Fault> = Fault::ALL.into_iter().filter(|f| cells.iter().any(|c| c.fault == *f)).collect();
    let mut out = String::new();
    let measures: [(&str, Measure); 6] = [
        ("Double grants: pairs of overlapping critical sections on one name, per run (longest overlap)", double_grants),
        ("Stale fenced writes accepted (a token given to two holders), per run", stale_writes),
        (
            "From the fault to the first grant after it (failover: to the Sentinels naming a new primary, \
             and how many more times the primary changed; old: to the last grant or renewal the first \
             primary took), per run",
            unavailability,
        ),
        ("Grants, per run", grants),
        (
            "Waiters stuck while their lock was free for over 1 s (outside the outage from the fault to \
             the first grant after the failover), per run (waits): rlock-client's, and the blocking \
             clients' (waiting on the server)",
            stuck_waiters,
        ),
        (
            "rlock-client's `lost()`: holds reported lost after the fault, and when the first and the \
             last were reported, per run",
            lost_holds,
        ),
    ];
    for (title, measure) in measures {
        let _ = writeln!(out, "### {title}\n");
        let header: Vec<&str> = faults.iter().map(|fault| fault.label()).collect();
        let _ = writeln!(out, "| configuration | {} |", header.join(" | "));
        let _ = writeln!(out, "| --- |{}", " --- |".repeat(faults.len()));
        for setup in &setups {
            let row: Vec<String> = faults
                .iter()
                .map(|fault| {
                    let cell = cells.iter().find(|c| c.setup.label == setup.label && c.fault == *fault);
                    cell.map_or("–".to_owned(), |cell| measure(&cell.runs))
                })
                .collect();
            let _ = writeln!(out, "| {} | {} |", setup.label, row.join(" | "));
        }
        out.push('\n');
    }
    out
}

/// One measure's cell text, from the runs of a cell.
type Measure = fn(&[Outcome]) -> String;

fn per_run(runs: &[Outcome], each: impl Fn(&Outcome) -> String) -> String {
    runs.iter().map(each).collect::<Vec<_>>().join(", ")
}

fn ms(duration: Option<Duration>) -> String {
    duration.map_or("none".to_owned(), |d| format!("{:.1} s", d.as_secs_f64()))
}

fn double_grants(runs: &[Outcome]) -> String {
    let total: usize = runs.iter().map(|run| run.overlaps.pairs).sum();
    let longest = runs.iter().map(|run| run.overlaps.longest).max().unwrap_or_default();
    match total {
        0 => format!("**0** ({})", per_run(runs, |_| "0".into())),
        _ => format!(
            "**{total}** ({}; longest {} ms)",
            per_run(runs, |r| r.overlaps.pairs.to_string()),
            longest.as_millis()
        ),
    }
}

fn stale_writes(runs: &[Outcome]) -> String {
    let total: u64 = runs.iter().map(|run| run.stale_accepted).sum();
    format!(
        "**{total}** ({}; rejected {})",
        per_run(runs, |r| r.stale_accepted.to_string()),
        per_run(runs, |r| r.rejected.to_string())
    )
}

/// The old primary's last write is known only of the raw clients.
fn unavailability(runs: &[Outcome]) -> String {
    per_run(runs, |r| {
        let unknown = r.client_library.is_some() || r.old_primary_unknown;
        let old = if unknown { "–".to_owned() } else { ms(r.old_primary_wrote) };
        let changes = match r.primary_changes {
            0 | 1 => String::new(),
            n => format!(" then {} more", n - 1),
        };
        format!("{} (failover {}{changes}, old {old})", ms(r.first_grant), ms(r.failover))
    })
}

/// `–` for runs whose clients were not rlock-client's.
fn library(runs: &[Outcome], each: impl Fn(&LibraryOutcome) -> String) -> String {
    if runs.iter().all(|run| run.client_library.is_none()) {
        return "–".to_owned();
    }
    per_run(runs, |run| run.client_library.as_ref().map_or("–".to_owned(), &each))
}

fn stuck_waiters(runs: &[Outcome]) -> String {
    library(runs, |found| format!("**{}** ({})", found.stuck_waits, found.waits))
}

fn lost_holds(runs: &[Outcome]) -> String {
    library(runs, |found| {
        let Some(lost) = &found.lost_after_fault else { return "–".to_owned() };
        match (lost.iter().min(), lost.iter().max()) {
            (Some(first), Some(last)) => {
                format!("{} (first {}, last {})", lost.len(), ms(Some(*first)), ms(Some(*last)))
            }
            _ => "none".to_owned(),
        }
    })
}

fn grants(runs: &[Outcome]) -> String {
    per_run(runs, |r| r.grants.to_string())
}
