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
//! - then, optionally, `significant`: the condition holds only when the change is also
//!   significant (Welch's test with the diff's Benjamini-Hochberg correction, the `*` of the
//!   diff), which needs at least two runs a side.
//!
//! `placement.vs_waker.cross_package.share > +2pt` holds when that share grew by more than two
//! points; `scan.p99 > +10% significant` when p99 scan latency grew by more than 10 % beyond the
//! runs' noise.
//!
//! Every condition gets a verdict: it holds, it does not, or it cannot be evaluated (a side
//! without a value, a figure this machine cannot have, a relative change from 0, a change that
//! is not a finite number, `significant` without a test). A condition that cannot be evaluated
//! fails the gate unless the caller skips such conditions: a gate never passes silently.
use std::fmt;

use serde::Serialize;

use super::{DiffReport, Unit};

/// Longest expression or name an error message repeats (a condition is user input).
const SHOWN: usize = 120;

fn shown(s: &str) -> String {
    crate::safe_text::truncate(s, SHOWN)
}

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
    /// Holds only when the change is significant too.
    pub significant: bool,
    /// As written (bounded and escaped), for messages.
    pub text: String,
}

#[derive(Debug, PartialEq, thiserror::Error)]
pub enum GateError {
    #[error("--fail-if \"{0}\": {1}")]
    Syntax(String, String),
    #[error("--fail-if: no figure named \"{0}\"{1}")]
    UnknownName(String, String),
    #[error("--fail-if \"{0}\": `pt` applies to shares (names ending in .share); use `%`")]
    PointsOnNonShare(String),
}

fn syntax(text: &str, why: impl Into<String>) -> GateError {
    GateError::Syntax(shown(text.trim()), why.into())
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
    let (rest, significant) = match rest.strip_suffix("significant") {
        Some(r) => (r.trim_end(), true),
        None => (rest, false),
    };
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
        syntax(text, format!("\"{}\" is not a number (units: `pt` for shares, `%` relative, none for the figure's own unit; then optionally `significant`)", shown(num)))
    })?;
    if !threshold.is_finite() {
        return Err(syntax(
            text,
            format!("\"{}\" is not a finite number", shown(num)),
        ));
    }
    Ok(Condition {
        name: name.into(),
        op,
        threshold,
        unit,
        significant,
        text: shown(s),
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
        return Err(GateError::UnknownName(shown(&c.name), hint));
    };
    if c.unit == ChangeUnit::Points && d.unit != crate::figures::DefUnit::Share {
        return Err(GateError::PointsOnNonShare(c.text.clone()));
    }
    Ok(d)
}

/// What a condition came to.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "outcome", content = "reason", rename_all = "snake_case")]
pub enum Outcome {
    Holds,
    DoesNotHold,
    /// Why not: fails the gate unless such conditions are skipped.
    CannotEvaluate(String),
}

/// A condition checked against a diff: the last group against the first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub condition: String,
    /// `"outcome"`: `holds`, `does_not_hold` or `cannot_evaluate` (with `"reason"`).
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The first and the last group (names escaped) and their means (`None`: n/a).
    pub base_group: String,
    pub new_group: String,
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// In the condition's unit (points, percent or the figure's own).
    pub change: Option<f64>,
    pub change_unit: String,
    /// Welch's p-value of the last group against the first, and whether it is significant
    /// after the diff's correction (`None`: fewer than two runs on a side).
    pub p_value: Option<f64>,
    pub significant: bool,
}

impl Verdict {
    pub fn holds(&self) -> bool {
        self.outcome == Outcome::Holds
    }

    /// Whether this verdict fails the gate: it holds, or it cannot be evaluated and such
    /// conditions are not skipped.
    pub fn fails(&self, skip_unevaluable: bool) -> bool {
        match self.outcome {
            Outcome::Holds => true,
            Outcome::DoesNotHold => false,
            Outcome::CannotEvaluate(_) => !skip_unevaluable,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = |x: Option<f64>| x.map_or_else(|| "n/a".to_string(), |x| format!("{x:.2}"));
        let what = match &self.outcome {
            Outcome::Holds => "HOLDS".to_string(),
            Outcome::DoesNotHold => "does not hold".into(),
            Outcome::CannotEvaluate(why) => format!("cannot be evaluated: {why}"),
        };
        let change = self.change.map_or_else(
            || "n/a".to_string(),
            |c| format!("{c:+.2}{}", self.change_unit),
        );
        let p = self.p_value.map_or_else(
            || "p n/a".to_string(),
            |p| {
                let sig = if self.significant {
                    "significant"
                } else {
                    "not significant"
                };
                format!("p={p:.3}, {sig}")
            },
        );
        write!(
            f,
            "{}: {what} (base {} {} -> new {} {}, change {change}, {p})",
            self.condition,
            self.base_group,
            v(self.base),
            self.new_group,
            v(self.new)
        )
    }
}

/// Checks `c` on `r`: the last group against the first. The name must be a registered figure
/// ([`check_name`]); a figure no run has cannot be evaluated.
pub fn evaluate(r: &DiffReport, c: &Condition) -> Result<Verdict, GateError> {
    let row = r.row(&c.name);
    if let Some(row) = row
        && c.unit == ChangeUnit::Points
        && row.unit != Unit::Share
    {
        return Err(GateError::PointsOnNonShare(c.text.clone()));
    }
    let (first, last) = match row {
        Some(row) => (row.groups.first(), row.groups.last()),
        None => (None, None),
    };
    let (b, n) = (first.and_then(|x| x.mean), last.and_then(|x| x.mean));
    let groups = match (r.groups.first(), r.groups.last()) {
        (Some(a), Some(z)) => (a.name.as_str(), z.name.as_str()),
        _ => ("base", "new"),
    };
    let mut v = Verdict {
        condition: c.text.clone(),
        outcome: Outcome::DoesNotHold,
        base_group: shown(groups.0),
        new_group: shown(groups.1),
        base: b,
        new: n,
        change: None,
        change_unit: match c.unit {
            ChangeUnit::Points => " pt".to_string(),
            ChangeUnit::Percent => " %".into(),
            ChangeUnit::Absolute => row
                .map(|r| format!(" {}", r.unit.label()).trim_end().to_string())
                .unwrap_or_default(),
        },
        p_value: last.and_then(|x| x.p_value).filter(|p| p.is_finite()),
        significant: last.is_some_and(|x| x.significant),
    };
    let cannot = |why: String| Outcome::CannotEvaluate(why);
    v.outcome = match (row, b, n) {
        (None, ..) => cannot("no run has this figure (n/a on every side)".into()),
        (_, None, _) => cannot(format!("n/a in {}", shown(groups.0))),
        (_, _, None) => cannot(format!("n/a in {}", shown(groups.1))),
        (Some(_), Some(b), Some(n)) => {
            let change = match c.unit {
                ChangeUnit::Percent if b == 0.0 => None,
                ChangeUnit::Percent => Some((n - b) * 100.0 / b.abs()),
                _ => Some(n - b),
            };
            match change {
                None => cannot("the base is 0: a relative change is undefined".into()),
                Some(ch) if !ch.is_finite() || !b.is_finite() || !n.is_finite() => {
                    cannot("the change is not a finite number".into())
                }
                Some(ch) => {
                    v.change = Some(ch);
                    let beyond = c.op.holds(ch, c.threshold);
                    match (c.significant, v.p_value) {
                        (true, None) => cannot(
                            "`significant` needs a test: at least two runs in each group".into(),
                        ),
                        (true, Some(_)) if beyond && v.significant => Outcome::Holds,
                        (false, _) if beyond => Outcome::Holds,
                        _ => Outcome::DoesNotHold,
                    }
                }
            }
        }
    };
    Ok(v)
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
        let c = parse("scan.p99 > +10% significant").unwrap();
        assert_eq!(
            (c.threshold, c.unit, c.significant),
            (10.0, ChangeUnit::Percent, true)
        );
        assert!(!parse("scan.p99 > +10%").unwrap().significant);
        // A long expression is repeated once, bounded.
        let long = format!("scan.p99 > {}", "9".repeat(130_000) + "x");
        let e = err(&long);
        assert!(
            e.len() < 600 && e.matches("999").count() < 100,
            "{}",
            e.len()
        );
        assert!(err("scan.p99 > +10ms").contains("is not a number"));
        assert!(err("scan.p99 > inf%").contains("finite"));
        assert!(err("scan p99 > 1").contains("expected `>`"));
        assert!(err("scan.p99! > 1").contains("unexpected '!'"));
        for s in ["", "scan.p99", "x > y"] {
            assert!(!err(s).contains('\n'), "one line: {}", err(s));
        }
    }
}
