//! Number formatting and small drawing helpers shared by the views.
use ratatui::{
    style::{Color, Modifier, Style},
    text::{Line, Span},
};

/// `1234` -> `1234`, `12345` -> `12.3k`, `1234567` -> `1.23M`.
pub fn count(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.2}M", n as f64 / 1e6),
        _ => format!("{:.2}G", n as f64 / 1e9),
    }
}

pub fn rate(r: f64) -> String {
    if r < 10_000.0 {
        format!("{r:.0}")
    } else {
        count(r as u64)
    }
}

/// Nanoseconds with a unit that keeps 2-3 significant digits.
pub fn ns(v: u64) -> String {
    match v {
        0..=999 => format!("{v}ns"),
        1_000..=999_999 => format!("{:.1}us", v as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1}ms", v as f64 / 1e6),
        _ => format!("{:.2}s", v as f64 / 1e9),
    }
}

pub fn pct(n: u64, d: u64) -> String {
    if d == 0 {
        "-".into()
    } else {
        format!("{:.1}%", n as f64 * 100.0 / d as f64)
    }
}

/// Seconds of stream time, `+1.234 s`.
pub fn secs(ns: u64) -> String {
    format!("+{:.3} s", ns as f64 / 1e9)
}

/// A horizontal bar of `width` cells filled to `n / max`, with eighth-cell precision.
pub fn bar(n: u64, max: u64, width: usize) -> String {
    const PARTS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    if max == 0 || width == 0 {
        return " ".repeat(width);
    }
    let eighths = ((u128::from(n) * width as u128 * 8) / u128::from(max)) as usize;
    let full = (eighths / 8).min(width);
    let mut s = "█".repeat(full);
    if full < width {
        s.push(PARTS[eighths % 8]);
        s.push_str(&" ".repeat(width - full - 1));
    }
    s
}

/// Shade of a map cell for `n` out of `max`: ` ` none, then `░▒▓█` by quarter.
pub fn shade(n: u64, max: u64) -> char {
    if n == 0 || max == 0 {
        return '·';
    }
    match (n * 4).div_ceil(max) {
        0 | 1 => '░',
        2 => '▒',
        3 => '▓',
        _ => '█',
    }
}

pub fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

pub fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

pub fn warn() -> Style {
    Style::default().fg(Color::Yellow)
}

pub fn bad() -> Style {
    Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
}

pub fn key(s: &str) -> Span<'_> {
    Span::styled(
        s,
        Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD),
    )
}

/// `s` in at most `w` characters; a cut is marked with a trailing `…`, never silent.
pub fn ellipsis(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        s.to_string()
    } else if w == 0 {
        String::new()
    } else {
        let mut t: String = s.chars().take(w - 1).collect();
        t.push('…');
        t
    }
}

/// Word-wraps `s` to lines of at most `w` characters (a word longer than a line is split), so
/// a panel knows how many rows a text takes before it decides what to cut.
pub fn wrap(s: &str, w: usize) -> Vec<String> {
    let w = w.max(1);
    let mut out = Vec::new();
    let mut cur = String::new();
    for word in s.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let used = cur.chars().count();
            let sep = usize::from(used > 0);
            if used + sep + word.len() <= w {
                if sep == 1 {
                    cur.push(' ');
                }
                cur.extend(word.iter());
                break;
            }
            if used > 0 {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            // A word longer than the line: split it.
            let rest = word.split_off(w);
            out.push(word.iter().collect());
            word = rest;
        }
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

/// At most `h` of `lines`; when some are cut, the last row kept says how many (`… 3 more ↓`).
/// `lines` scrolled down by `off` (at most to the last screenful) into `h` rows: what is above
/// is marked on the first row, what is below on the last.
pub fn scroll_lines<'a>(lines: Vec<Line<'a>>, off: usize, h: usize) -> Vec<Line<'a>> {
    let max = lines
        .len()
        .saturating_sub(h.saturating_sub(1))
        .min(lines.len());
    let off = off.min(max);
    if off == 0 || h < 2 {
        return cut_lines(lines, h);
    }
    let mut out = vec![Line::from(Span::styled(format!("↑ {off} more"), dim()))];
    out.extend(cut_lines(lines.into_iter().skip(off).collect(), h - 1));
    out
}

pub fn cut_lines<'a>(mut lines: Vec<Line<'a>>, h: usize) -> Vec<Line<'a>> {
    if lines.len() <= h {
        return lines;
    }
    if h == 0 {
        return Vec::new();
    }
    let more = lines.len() - (h - 1);
    lines.truncate(h - 1);
    lines.push(Line::from(Span::styled(format!("… {more} more ↓"), dim())));
    lines
}

/// Pads or cuts `s` to exactly `w` characters.
pub fn fit(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n > w {
        s.chars().take(w).collect()
    } else {
        format!("{s}{}", " ".repeat(w - n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(count(12_345), "12.3k");
        assert_eq!(ns(1_500), "1.5us");
        assert_eq!(bar(1, 2, 4), "██  ");
        assert_eq!(bar(2, 2, 4), "████");
        assert_eq!(bar(0, 0, 3), "   ");
        assert_eq!(shade(0, 9), '·');
        assert_eq!(shade(9, 9), '█');
        assert_eq!(shade(1, 9), '░');
        assert_eq!(fit("abcdef", 3), "abc");
        assert_eq!(ellipsis("abcdef", 4), "abc…");
        assert_eq!(ellipsis("abc", 4), "abc");
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(wrap("abcdefgh", 3), ["abc", "def", "gh"]);
        let l: Vec<Line> = (0..5).map(|i| Line::raw(i.to_string())).collect();
        let c = cut_lines(l, 3);
        assert_eq!(c.len(), 3);
        assert_eq!(c[2].to_string(), "… 3 more ↓");
    }
}

/// `line` in at most `w` columns, styles kept; a cut ends in `…` so no panel loses the end of
/// a line silently on a narrow terminal (one column per character: the views draw ASCII,
/// box, block and braille characters, all one column wide).
pub fn fit_line(line: Line<'_>, w: u16) -> Line<'_> {
    let w = usize::from(w);
    let n: usize = line.spans.iter().map(|s| s.content.chars().count()).sum();
    if n <= w {
        return line;
    }
    let style = line.style;
    let alignment = line.alignment;
    let mut left = w.saturating_sub(1);
    let mut spans = Vec::new();
    let mut last_style = Style::default();
    for s in line.spans {
        if left == 0 {
            break;
        }
        let c = s.content.chars().count();
        last_style = s.style;
        if c <= left {
            left -= c;
            spans.push(s);
        } else {
            let t: String = s.content.chars().take(left).collect();
            spans.push(Span::styled(t, s.style));
            left = 0;
        }
    }
    if w > 0 {
        spans.push(Span::styled("…", last_style));
    }
    let mut out = Line::from(spans).style(style);
    out.alignment = alignment;
    out
}

/// [`fit_line`] on every line.
pub fn fit_lines<'a>(lines: Vec<Line<'a>>, w: u16) -> Vec<Line<'a>> {
    lines.into_iter().map(|l| fit_line(l, w)).collect()
}

#[cfg(test)]
mod fit_tests {
    use super::*;

    fn text(l: &Line<'_>) -> String {
        l.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn a_cut_line_ends_in_an_ellipsis_and_keeps_its_styles() {
        let l = Line::from(vec![
            Span::raw("p50 10.7us "),
            Span::styled("max 233.0ms", bad()),
        ]);
        let short = fit_line(l.clone(), 16);
        assert_eq!(text(&short), "p50 10.7us max …");
        assert_eq!(short.spans[1].style, bad());
        assert_eq!(text(&fit_line(l.clone(), 22)), "p50 10.7us max 233.0ms");
        assert_eq!(text(&fit_line(l, 1)), "…");
    }
}
