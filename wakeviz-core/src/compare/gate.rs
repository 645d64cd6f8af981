//! `--fail-if` conditions: `NAME OP SIGNED-NUMBER [UNIT]`, evaluated on the change from the
//! first group to the last, so a kernel CI job can fail a patch on what it does to placement.
//!
//! - `NAME`: a row name of the diff (`placement.vs_waker.cross_package.share`, `scan.p99`; the
//!   `name` fields of `wakeviz diff --report json`);
//! - `OP`: `>`, `>=`, `<`, `<=`;
//! - the number, optionally signed (`+2`, `-5.5`, `10`), then the unit:
//!   `pt` (percentage points: the absolute change of a share), `%` (relative change against
//!   the first group), or nothing (absolute change in the figure's own unit).
//!
//! `placement.vs_waker.cross_package.share > +2pt` holds when that share grew by more than two
//! points; `scan.p99 > +10%` when p99 scan latency grew by more than 10 %.
use std::fmt;

use super::{DiffReport, Unit};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Gt,
    Ge,
    Lt,
    Le,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Self::Gt => a > b,
            Self::Ge => a >= b,
            Self::Lt => a < b,
            Self::Le => a <= b,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeUnit {
    /// Percentage points (shares only).
    Points,
    /// Relative, in percent.
    Percent,
    /// The figure's own unit.
    Absolute,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub name: String,
    pub op: Op,
    pub threshold: f64,
    pub unit: ChangeUnit,
    /// As written, for messages.
    pub text: String,
}

#[derive(Debug, PartialEq, thiserror::Error)]
pub enum GateError {
    #[error("--fail-if {0:?}: {1}")]
    Syntax(String, String),
    #[error("--fail-if {0:?}: no figure named {1:?}{2}")]
    UnknownName(String, String, String),
    #[error("--fail-if {0:?}: `pt` applies to shares (names ending in .share); use `%` for {1}")]
    PointsOnNonShare(String, String),
}

fn syntax(text: &str, why: impl Into<String>) -> GateError {
    GateError::Syntax(text.into(), why.into())
}

/// Parses one condition.
pub fn parse(text: &str) -> Result<Condition, GateError> {
    let s = text.trim();
    let name_end = s
        .find(|c: char| c.is_whitespace() || c == '<' || c == '>' || c == '=')
        .unwrap_or(s.len());
    let name = &s[..name_end];
    if name.is_empty() {
        return Err(syntax(
            text,
            "expected a figure name first, e.g. `scan.p99 > +10%`",
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(syntax(
            text,
            format!("unexpected {c:?} in the figure name {name:?}"),
        ));
    }
    let rest = s[name_end..].trim_start();
    let (op, rest) = if let Some(r) = rest.strip_prefix(">=") {
        (Op::Ge, r)
    } else if let Some(r) = rest.strip_prefix("<=") {
        (Op::Le, r)
    } else if let Some(r) = rest.strip_prefix('>') {
        (Op::Gt, r)
    } else if let Some(r) = rest.strip_prefix('<') {
        (Op::Lt, r)
    } else if rest.is_empty() {
        return Err(syntax(
            text,
            "missing the comparison: `>`, `>=`, `<` or `<=` and a change",
        ));
    } else {
        return Err(syntax(
            text,
            format!("expected `>`, `>=`, `<` or `<=` after the name, found {rest:?}"),
        ));
    };
    let rest = rest.trim();
    let (num, unit) = if let Some(n) = rest.strip_suffix("pt") {
        (n, ChangeUnit::Points)
    } else if let Some(n) = rest.strip_suffix('%') {
        (n, ChangeUnit::Percent)
    } else {
        (rest, ChangeUnit::Absolute)
    };
    let num = num.trim();
    if num.is_empty() {
        return Err(syntax(
            text,
            "missing the change after the comparison, e.g. `+2pt` or `+10%`",
        ));
    }
    let threshold: f64 = num.parse().map_err(|_| {
        syntax(text, format!("{num:?} is not a number (units: `pt` for shares, `%` relative, none for the figure's own unit)"))
    })?;
    if !threshold.is_finite() {
        return Err(syntax(text, format!("{num:?} is not a finite number")));
    }
    Ok(Condition {
        name: name.into(),
        op,
        threshold,
        unit,
        text: s.into(),
    })
}

/// Checks `c`'s figure name against the registry ([`crate::figures`]) before any recording is
/// read: an unknown name, or `pt` on a figure that is not a share, is refused at once.
pub fn check_name(c: &Condition) -> Result<&'static crate::figures::Def, GateError> {
    check_name_in(crate::figures::FAMILIES, c)
}

/// [`check_name`] against the definitions of `families`.
pub fn check_name_in(
    families: &[&dyn crate::figures::Family],
    c: &Condition,
) -> Result<&'static crate::figures::Def, GateError> {
    let Some(d) = crate::figures::lookup_in(families, &c.name) else {
        let head = c.name.split('.').next().unwrap_or("");
        let near: Vec<&str> = crate::figures::defs_of(families)
            .map(|d| d.name)
            .filter(|n| n.split('.').next() == Some(head))
            .take(4)
            .collect();
        let hint = if near.is_empty() {
            " (`wakeviz figures` lists every name)".into()
        } else {
            format!(
                " (names like: {}; `wakeviz figures` lists them all)",
                near.join(", ")
            )
        };
        return Err(GateError::UnknownName(c.text.clone(), c.name.clone(), hint));
    };
    if c.unit == ChangeUnit::Points && d.unit != crate::figures::DefUnit::Share {
        return Err(GateError::PointsOnNonShare(c.text.clone(), c.name.clone()));
    }
    Ok(d)
}

/// A condition checked against a diff.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub holds: bool,
    /// `None` when a side has no value (n/a): the condition is not evaluated and does not hold.
    pub change: Option<f64>,
    pub message: String,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Checks `c` on `r`: the last group against the first.
pub fn evaluate(r: &DiffReport, c: &Condition) -> Result<Verdict, GateError> {
    let Some(row) = r.row(&c.name) else {
        let head = c.name.split('.').next().unwrap_or("");
        let near: Vec<&str> = r
            .rows
            .iter()
            .map(|x| x.name.as_str())
            .filter(|n| n.split('.').next() == Some(head))
            .take(4)
            .collect();
        let hint = if near.is_empty() {
            " (the names are the `name` fields of `wakeviz diff --report json`)".into()
        } else {
            format!(" (names like: {})", near.join(", "))
        };
        return Err(GateError::UnknownName(c.text.clone(), c.name.clone(), hint));
    };
    if c.unit == ChangeUnit::Points && row.unit != Unit::Share {
        return Err(GateError::PointsOnNonShare(c.text.clone(), c.name.clone()));
    }
    let (first, last) = (row.groups.first(), row.groups.last());
    let (b, n) = (first.and_then(|x| x.mean), last.and_then(|x| x.mean));
    let change = match (b, n, c.unit) {
        (Some(b), Some(n), ChangeUnit::Percent) => (b != 0.0).then(|| (n - b) * 100.0 / b.abs()),
        (Some(b), Some(n), _) => Some(n - b),
        _ => None,
    };
    let unit = match c.unit {
        ChangeUnit::Points => " pt".to_string(),
        ChangeUnit::Percent => " %".into(),
        ChangeUnit::Absolute => format!(" {}", row.unit.label()).trim_end().to_string(),
    };
    let fmt_v = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.2}"));
    let groups = match (r.groups.first(), r.groups.last()) {
        (Some(a), Some(z)) => format!("{} -> {}", a.name, z.name),
        _ => String::new(),
    };
    let Some(ch) = change else {
        return Ok(Verdict {
            holds: false,
            change: None,
            message: format!(
                "{}: not evaluated ({groups}: {} -> {}, no change defined)",
                c.text,
                fmt_v(b),
                fmt_v(n)
            ),
        });
    };
    let holds = c.op.holds(ch, c.threshold);
    Ok(Verdict {
        holds,
        change: Some(ch),
        message: format!(
            "{}: {} ({groups}: {} -> {}, change {ch:+.2}{unit})",
            c.text,
            if holds { "HOLDS" } else { "ok" },
            fmt_v(b),
            fmt_v(n)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_forms() {
        let c = parse("placement.vs_waker.cross_package.share > +2pt").unwrap();
        assert_eq!(
            (c.name.as_str(), c.op, c.threshold, c.unit),
            (
                "placement.vs_waker.cross_package.share",
                Op::Gt,
                2.0,
                ChangeUnit::Points
            )
        );
        let c = parse("scan.p99>+10%").unwrap();
        assert_eq!(
            (c.op, c.threshold, c.unit),
            (Op::Gt, 10.0, ChangeUnit::Percent)
        );
        let c = parse(" workload.pipe.usecs_per_op <= -5.5 % ").unwrap();
        assert_eq!(
            (c.op, c.threshold, c.unit),
            (Op::Le, -5.5, ChangeUnit::Percent)
        );
        let c = parse("scan.p50 >= 100").unwrap();
        assert_eq!(
            (c.op, c.threshold, c.unit),
            (Op::Ge, 100.0, ChangeUnit::Absolute)
        );
        assert_eq!(parse("a < -1pt").unwrap().op, Op::Lt);
    }

    #[test]
    fn parse_errors_say_what_is_wrong() {
        let err = |s: &str| parse(s).unwrap_err().to_string();
        assert!(err("").contains("expected a figure name"), "{}", err(""));
        assert!(err("> 2pt").contains("expected a figure name"));
        assert!(err("scan.p99").contains("missing the comparison"));
        assert!(
            err("scan.p99 = 2%").contains("expected `>`"),
            "{}",
            err("scan.p99 = 2%")
        );
        assert!(err("scan.p99 >").contains("missing the change"));
        assert!(err("scan.p99 > %").contains("missing the change"));
        assert!(err("scan.p99 > ten%").contains("\"ten\" is not a number"));
        assert!(err("scan.p99 > +10ms").contains("is not a number"));
        assert!(err("scan.p99 > inf%").contains("finite"));
        assert!(err("scan p99 > 1").contains("expected `>`"));
        assert!(err("scan.p99! > 1").contains("unexpected '!'"));
        for s in ["", "scan.p99", "x > y"] {
            assert!(!err(s).contains('\n'), "one line: {}", err(s));
        }
    }
}
