//! The text of `wakeviz diff`, in the style of scheduler patch reviews: one column per group,
//! the first group's value, then each other group's `value (x.xx pct)` against it (`pt` for
//! shares: the change in percentage points), `*` where the change is larger than the runs' own
//! noise. Lines fit 100 columns: with many groups the columns wrap into several tables.
use std::fmt::Write;

use super::{Cell, DiffReport, Row, Section, Unit};

pub const WIDTH: usize = 100;
const MAX_LABEL: usize = 44;

pub(super) fn num(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// A value of `r`: a whole count (one run's, or a mean that came out whole) as an integer,
/// as the patch threads print counts.
fn value(r: &Row, v: f64) -> String {
    if r.unit == Unit::Count && v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        num(v)
    }
}

fn cell(r: &Row, c: &Cell, first: bool) -> String {
    let Some(m) = c.mean else {
        return "n/a".into();
    };
    if first {
        return value(r, m);
    }
    let change = match (r.unit == Unit::Share, c.change, c.change_pct) {
        (true, Some(d), _) => format!("{d:+.2} pt"),
        (false, _, Some(p)) => format!("{p:+.2} pct"),
        (false, Some(d), None) if d != 0.0 => "from 0".into(),
        (false, Some(_), None) => "+0.00 pct".into(),
        _ => "n/a".into(),
    };
    let mark = match (c.significant, c.regression) {
        (true, Some(true)) => " * worse",
        (true, Some(false)) => " * better",
        (true, None) => " *",
        _ => "",
    };
    format!("{} ({change}){mark}", value(r, m))
}

pub(super) fn clip(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(w.saturating_sub(1)).collect();
        t.push('~');
        t
    }
}

fn label(r: &Row) -> String {
    let u = r.unit.label();
    if u.is_empty() {
        r.label.clone()
    } else {
        format!("{} [{u}]", r.label)
    }
}

fn table(out: &mut String, rep: &DiffReport, rows: &[&Row]) {
    let lw = rows
        .iter()
        .map(|r| label(r).len())
        .max()
        .unwrap_or(0)
        .clamp(6, MAX_LABEL);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.groups
                .iter()
                .enumerate()
                .map(|(i, c)| cell(r, c, i == 0))
                .collect()
        })
        .collect();
    let ng = rep.groups.len();
    let colw = |g: usize| {
        cells
            .iter()
            .map(|c| c.get(g).map_or(0, String::len))
            .max()
            .unwrap_or(0)
            .max(rep.groups[g].name.len().min(24))
    };
    let w0 = colw(0);
    let others: Vec<usize> = (1..ng).collect();
    // As many comparison columns per table as fit beside the label and the base column.
    let mut chunks: Vec<Vec<usize>> = Vec::new();
    let mut cur: Vec<usize> = Vec::new();
    let mut used = 2 + lw + 2 + w0;
    for g in others {
        let w = colw(g) + 2;
        if !cur.is_empty() && used + w > WIDTH {
            chunks.push(std::mem::take(&mut cur));
            used = 2 + lw + 2 + w0;
        }
        used += w;
        cur.push(g);
    }
    if !cur.is_empty() || chunks.is_empty() {
        chunks.push(cur);
    }
    for (k, chunk) in chunks.iter().enumerate() {
        if k > 0 {
            out.push('\n');
        }
        let mut head = format!("  {:<lw$}  {:>w0$}", "", clip(&rep.groups[0].name, w0));
        for &g in chunk {
            let w = colw(g);
            let _ = write!(head, "  {:<w$}", clip(&rep.groups[g].name, w));
        }
        let _ = writeln!(out, "{}", head.trim_end());
        for (r, c) in rows.iter().zip(&cells) {
            let mut line = format!("  {:<lw$}  {:>w0$}", clip(&label(r), lw), c[0]);
            for &g in chunk {
                let w = colw(g);
                let _ = write!(line, "  {:<w$}", c[g]);
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
}

fn meta_text(out: &mut String, rep: &DiffReport) {
    let differs: Vec<_> = rep.metadata.iter().filter(|m| m.differs).collect();
    if differs.is_empty() {
        let _ = writeln!(out, "Conditions: the same in every run");
    } else {
        let _ = writeln!(out, "Conditions that differ");
        for m in differs {
            let vals: Vec<String> = rep
                .groups
                .iter()
                .zip(&m.values)
                .map(|(g, v)| format!("{}: {}", g.name, v.join(" | ")))
                .collect();
            let line = format!("  {:<28} {}", m.field, vals.join("; "));
            let _ = writeln!(out, "{}", clip(&line, WIDTH));
        }
    }
    let same: Vec<String> = rep
        .metadata
        .iter()
        .filter(|m| {
            !m.differs
                && [
                    "kernel_release",
                    "topology",
                    "cpu_model",
                    "command",
                    "scope",
                ]
                .contains(&m.field.as_str())
        })
        .filter_map(|m| Some(format!("{} {}", m.field, m.values.first()?.first()?)))
        .collect();
    if !same.is_empty() {
        wrap(
            out,
            &format!("Same in every run: {}", same.join("; ")),
            "  ",
        );
    }
}

/// Writes `s` in lines of at most [`WIDTH`] columns, continuation lines indented.
pub(super) fn wrap(out: &mut String, s: &str, indent: &str) {
    let mut line = String::new();
    for w in s.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + w.len() > WIDTH {
            let _ = writeln!(out, "{line}");
            line = indent.to_string();
        } else if !line.is_empty() && line != indent {
            line.push(' ');
        }
        line.push_str(w);
    }
    if !line.trim().is_empty() {
        let _ = writeln!(out, "{line}");
    }
}

/// The whole diff as text.
pub fn render(rep: &DiffReport) -> String {
    let mut out = String::new();
    let groups: Vec<String> = rep
        .groups
        .iter()
        .map(|g| {
            format!(
                "{} ({} run{})",
                g.name,
                g.runs,
                if g.runs == 1 { "" } else { "s" }
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "{}",
        clip(&format!("wakeviz diff: {}", groups.join(" vs ")), WIDTH)
    );
    meta_text(&mut out, rep);
    for n in &rep.notes {
        wrap(&mut out, &format!("note: {n}"), "      ");
    }
    let mut hidden = 0;
    for s in Section::ALL {
        let rows: Vec<&Row> = rep.rows.iter().filter(|r| r.section == s).collect();
        if rows.is_empty() {
            continue;
        }
        let shown: Vec<&Row> = rows.iter().copied().filter(|r| !r.is_empty()).collect();
        hidden += rows.len() - shown.len();
        let _ = writeln!(out, "\n{} [{}]", s.title(), s.name());
        if shown.is_empty() {
            let _ = writeln!(out, "  (every figure 0 or n/a)");
            continue;
        }
        table(&mut out, rep, &shown);
    }
    for p in &rep.predictions {
        super::predict::text::render(&mut out, p);
    }
    out.push('\n');
    super::predict::text::legend(&mut out, &rep.predictions);
    let _ = writeln!(
        out,
        "pct: change against {} (relative); pt: change of a share in percentage points; n/a: no data",
        rep.groups
            .first()
            .map_or("the first group", |g| g.name.as_str())
    );
    if rep.test.performed {
        let _ = writeln!(
            out,
            "*: larger than the runs' own noise: Welch's two-sided t-test on the per-run values,\n   95 %, Benjamini-Hochberg-corrected over the {} comparisons of this diff",
            rep.test.comparisons
        );
    } else {
        let _ = writeln!(
            out,
            "no * markers: a group has a single run, so its noise is unknown (Welch's t-test needs\n   2+ runs per group; record 3 or more)"
        );
    }
    if hidden > 0 {
        let _ = writeln!(
            out,
            "{hidden} figures at 0 or n/a in every group are left out here (they are in --report json)"
        );
    }
    out
}
