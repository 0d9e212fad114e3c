//! The recording drawn as an SVG: a time axis; the turns as bars, with the agent's
//! break-points (tool results) marked on them; one line per message the client sent, from the
//! call to its delivery (a steer at a break-point, a queued message at the start of a turn) or
//! its revocation, with its replacement marked; the agent's pending list over time as stacked
//! boxes, one per pending item; and a legend.
//!
//! Written by hand rather than with an SVG crate: the picture is a few dozen rectangles, lines
//! and labels, which `format!` writes as directly as a builder would, and the output stays
//! byte-for-byte a function of the recording (no ids, no floating-point noise beyond one
//! decimal), with no dependency to keep up to date. A test parses the output as XML.

use std::fmt::Write as _;

use crate::record::{turns, Event, Recording};

const WIDTH: f64 = 1000.0;
const LEFT: f64 = 270.0;
const RIGHT: f64 = 40.0;
const ROW: f64 = 30.0;
const BOX: f64 = 16.0;

const PROMPT: &str = "#495057";
const STEER: &str = "#e8590c";
const QUEUE: &str = "#1971c2";
const REVOKED: &str = "#c92a2a";
const TURN: &str = "#b2f2bb";

fn colour(mode: &str) -> &'static str {
    match mode {
        "steer" => STEER,
        "queue" => QUEUE,
        _ => PROMPT,
    }
}

/// Text for an XML text node or attribute.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(max - 1).collect::<String>())
    }
}

/// A round step for the time axis, about `span / 8`.
fn tick_step(span: f64) -> f64 {
    let raw = (span / 8.0).max(1.0);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * magnitude).find(|s| *s >= raw).unwrap_or(10.0 * magnitude)
}

/// One message the client sent, as its line shows it.
struct Message {
    mode: String,
    text: String,
    id: String,
    sent: f64,
    accepted: f64,
    replaced: Option<(f64, String)>,
    /// Delivered (`user_message`) or revoked, and when.
    end: Option<(f64, bool)>,
}

fn messages(recording: &Recording) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    let mut sent: Option<(f64, String, String)> = None;
    let mut replacing: Option<String> = None;
    for e in &recording.events {
        match e {
            Event::Sent { t, call, mode, text, .. } if call == "prompt" || call == "inject" => {
                sent = Some((*t, mode.clone().unwrap_or_else(|| "prompt".into()), text.clone().unwrap_or_default()));
            }
            Event::Answered { t, call, message_id: Some(id), .. } if call == "prompt" || call == "inject" => {
                if let Some((s, mode, text)) = sent.take() {
                    out.push(Message { mode, text, id: id.clone(), sent: s, accepted: *t, replaced: None, end: None });
                }
            }
            Event::Sent { call, text, .. } if call == "replace" => replacing = text.clone(),
            Event::Answered { t, call, message_id: Some(id), .. } => {
                let Some(m) = out.iter_mut().find(|m| &m.id == id) else { continue };
                if call == "replace" {
                    m.replaced = Some((*t, std::mem::replace(&mut m.text, replacing.take().unwrap_or_default())));
                } else if call == "revoke" && m.end.is_none() {
                    m.end = Some((*t, false));
                }
            }
            Event::UserMessage { t, message_id, .. } => {
                if let Some(m) = out.iter_mut().find(|m| &m.id == message_id && m.end.is_none()) {
                    m.end = Some((*t, true));
                }
            }
            _ => {}
        }
    }
    out
}

/// The SVG of a recording.
pub fn svg(recording: &Recording) -> String {
    let turns = turns(recording);
    let messages = messages(recording);
    let last = recording.events.iter().map(Event::t).fold(0.0, f64::max);
    let step = tick_step(last);
    let span = (last / step).ceil().max(1.0) * step;
    let x = |t: f64| LEFT + t / span * (WIDTH - LEFT - RIGHT);
    let pending: Vec<(f64, Vec<(String, String)>)> = recording
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Pending { t, items } => Some((*t, items.iter().map(|i| (i.mode.clone(), i.text.clone())).collect())),
            _ => None,
        })
        .collect();
    let most = pending.iter().map(|(_, items)| items.len()).max().unwrap_or(0).max(1);
    let breaks: Vec<f64> = recording
        .events
        .iter()
        .filter_map(|e| match e {
            Event::BreakPoint { t, .. } => Some(*t),
            _ => None,
        })
        .collect();

    let turn_y = 64.0;
    let rows_y = turn_y + 74.0;
    let pending_top = rows_y + ROW * messages.len() as f64 + 24.0;
    let pending_base = pending_top + 18.0 + BOX * most as f64;
    let axis_y = pending_base + 8.0;
    let legend_y = axis_y + 44.0;
    let height = legend_y + 40.0;

    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(
        w,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="system-ui, sans-serif" font-size="12" role="img" aria-labelledby="timeline-title">"#
    );
    let _ = writeln!(
        w,
        r#"<title id="timeline-title">A recorded session: turns, steers at break-points, the pending list over time</title>"#
    );
    let _ = writeln!(w, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = writeln!(
        w,
        r##"<text x="12" y="22" font-size="15" font-weight="bold">A recorded session ({} ms)</text><text x="12" y="40" fill="#495057">{}, session {}</text>"##,
        last.round(),
        esc(&recording.agent.join(" ")),
        esc(&recording.session_id)
    );

    // Guides through every lane: the turns' edges and the break-points.
    for (a, b) in &turns {
        for t in [a, b] {
            let _ = writeln!(
                w,
                r##"<line x1="{0:.1}" y1="{turn_y}" x2="{0:.1}" y2="{pending_base}" stroke="#2b8a3e" stroke-opacity="0.35"/>"##,
                x(*t)
            );
        }
    }
    for t in &breaks {
        let _ = writeln!(
            w,
            r##"<line x1="{0:.1}" y1="{turn_y}" x2="{0:.1}" y2="{pending_base}" stroke="#868e96" stroke-dasharray="3 3" stroke-opacity="0.6"/>"##,
            x(*t)
        );
    }

    // The turns, with their break-points.
    let _ = writeln!(w, r#"<text x="12" y="{}" font-weight="bold">turns</text>"#, turn_y + 17.0);
    let _ = writeln!(w, r##"<text x="12" y="{}" fill="#495057" font-size="11">state running → idle</text>"##, turn_y + 31.0);
    for (i, (a, b)) in turns.iter().enumerate() {
        let _ = writeln!(
            w,
            r##"<rect x="{:.1}" y="{turn_y}" width="{:.1}" height="26" rx="3" fill="{TURN}" stroke="#2b8a3e"><title>turn {}: {a:.0}–{b:.0} ms</title></rect><text x="{:.1}" y="{}" fill="#2b8a3e" font-weight="bold">turn {}</text>"##,
            x(*a),
            x(*b) - x(*a),
            i + 1,
            x(*a) + 6.0,
            turn_y + 17.0,
            i + 1
        );
    }
    for t in &breaks {
        let (cx, cy) = (x(*t), turn_y + 26.0);
        let _ = writeln!(
            w,
            r##"<path d="M{:.1} {cy} l5 6 l-5 6 l-5 -6 z" fill="#343a40"><title>break-point (a tool result) at {t:.0} ms</title></path>"##,
            cx
        );
    }

    // Each delivery, on the turn bar too: steers inside a turn, queued messages at its start.
    for m in &messages {
        if let Some((t, true)) = m.end {
            let _ = writeln!(
                w,
                r##"<circle cx="{:.1}" cy="{turn_y}" r="4" fill="{}" stroke="#ffffff"><title>{} delivered at {t:.0} ms</title></circle>"##,
                x(t),
                colour(&m.mode),
                esc(&m.id)
            );
        }
    }

    // One line per message.
    let _ = writeln!(w, r#"<text x="12" y="{}" font-weight="bold">messages sent</text>"#, rows_y - 8.0);
    for (i, m) in messages.iter().enumerate() {
        let y = rows_y + ROW * i as f64 + ROW / 2.0;
        let c = colour(&m.mode);
        let full = match &m.replaced {
            Some((_, old)) => format!("{} (replaced {:?})", m.text, old),
            None => m.text.clone(),
        };
        let _ = writeln!(
            w,
            r#"<text x="12" y="{:.1}"><tspan fill="{c}" font-weight="bold">{}</tspan> {}<title>{} {}: {}</title></text>"#,
            y + 4.0,
            m.mode,
            esc(&short(&m.text, 34)),
            m.mode,
            esc(&m.id),
            esc(&full)
        );
        let end = m.end.map_or(last, |(t, _)| t);
        let _ = writeln!(
            w,
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{c}" stroke-width="1.5"/><line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{c}" stroke-width="5" stroke-opacity="0.35"/>"##,
            x(m.sent),
            x(end),
            x(m.accepted),
            x(end)
        );
        let _ = writeln!(
            w,
            r##"<circle cx="{:.1}" cy="{y:.1}" r="4" fill="#ffffff" stroke="{c}" stroke-width="1.5"><title>sent at {:.0} ms</title></circle><line x1="{:.1}" y1="{}" x2="{:.1}" y2="{}" stroke="{c}" stroke-width="2"><title>accepted at {:.0} ms: {}</title></line>"##,
            x(m.sent),
            m.sent,
            x(m.accepted),
            y - 6.0,
            x(m.accepted),
            y + 6.0,
            m.accepted,
            esc(&m.id)
        );
        if let Some((t, old)) = &m.replaced {
            let _ = writeln!(
                w,
                r##"<rect x="{:.1}" y="{:.1}" width="8" height="8" transform="rotate(45 {:.1} {y:.1})" fill="#ffffff" stroke="{c}" stroke-width="1.5"><title>replaced at {t:.0} ms (was {})</title></rect>"##,
                x(*t) - 4.0,
                y - 4.0,
                x(*t),
                esc(&format!("{old:?}"))
            );
        }
        let note = match m.end {
            Some((t, true)) => {
                let _ = writeln!(
                    w,
                    r#"<circle cx="{:.1}" cy="{y:.1}" r="5.5" fill="{c}"><title>delivered at {t:.0} ms (user_message {})</title></circle>"#,
                    x(t),
                    esc(&m.id)
                );
                let opened = turns.iter().position(|(a, _)| (a - t).abs() < 25.0 || (t < *a && a - t < 25.0));
                let during = turns.iter().position(|(a, b)| t > *a + 25.0 && t <= *b);
                match (m.mode.as_str(), opened, during) {
                    ("steer", _, Some(n)) => format!("delivered at a break-point of turn {}", n + 1),
                    (_, Some(n), _) => format!("delivered: opens turn {}", n + 1),
                    _ => "delivered".into(),
                }
            }
            Some((t, false)) => {
                let (cx, r) = (x(t), 5.0);
                let _ = writeln!(
                    w,
                    r#"<path d="M{:.1} {:.1} l{} {} M{:.1} {:.1} l{} -{}" stroke="{REVOKED}" stroke-width="2.5"><title>revoked at {t:.0} ms</title></path>"#,
                    cx - r,
                    y - r,
                    2.0 * r,
                    2.0 * r,
                    cx - r,
                    y + r,
                    2.0 * r,
                    2.0 * r
                );
                "revoked while pending: never delivered".into()
            }
            None => "not delivered".into(),
        };
        let note = match &m.replaced {
            Some(_) => format!("replaced while pending; {note}"),
            None => note,
        };
        let anchor_x = x(end) + 10.0;
        let (tx, anchor) = if anchor_x > WIDTH - 200.0 { (x(end) - 10.0, "end") } else { (anchor_x, "start") };
        let _ = writeln!(
            w,
            r##"<text x="{tx:.1}" y="{:.1}" fill="#495057" font-size="11" text-anchor="{anchor}">{}</text>"##,
            y + 4.0 - 9.0,
            esc(&note)
        );
    }

    // The agent's pending list over time: each update holds until the next.
    let _ = writeln!(w, r#"<text x="12" y="{}" font-weight="bold">the agent's pending list</text>"#, pending_top + 14.0);
    let _ =
        writeln!(w, r##"<text x="12" y="{}" fill="#495057" font-size="11">one box per pending inject</text>"##, pending_top + 28.0);
    let _ = writeln!(w, r##"<line x1="{LEFT}" y1="{pending_base}" x2="{:.1}" y2="{pending_base}" stroke="#343a40"/>"##, WIDTH - RIGHT);
    for (k, (t, items)) in pending.iter().enumerate() {
        let until = pending.get(k + 1).map_or(last, |(next, _)| *next);
        for (j, (mode, text)) in items.iter().enumerate() {
            let y = pending_base - BOX * (j + 1) as f64;
            let _ = writeln!(
                w,
                r##"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{}" fill="{}" fill-opacity="0.55" stroke="#ffffff"><title>{mode}: {} ({t:.0}–{until:.0} ms)</title></rect>"##,
                x(*t),
                (x(until) - x(*t)).max(0.5),
                BOX,
                colour(mode),
                esc(text)
            );
        }
    }
    for n in 1..=most {
        let _ = writeln!(
            w,
            r##"<text x="{:.1}" y="{:.1}" fill="#868e96" font-size="10" text-anchor="end">{n}</text>"##,
            LEFT - 6.0,
            pending_base - BOX * n as f64 + 11.0
        );
    }

    // The time axis.
    let mut t = 0.0;
    while t <= span + 0.001 {
        let _ = writeln!(
            w,
            r##"<line x1="{0:.1}" y1="{axis_y}" x2="{0:.1}" y2="{1}" stroke="#343a40"/><text x="{0:.1}" y="{2}" text-anchor="middle" fill="#343a40">{3}</text>"##,
            x(t),
            axis_y + 5.0,
            axis_y + 18.0,
            t.round()
        );
        t += step;
    }
    let _ = writeln!(
        w,
        r##"<text x="{:.1}" y="{}" text-anchor="end" fill="#343a40">ms since the session was created</text>"##,
        WIDTH - RIGHT,
        axis_y + 34.0
    );

    // The legend.
    let mut lx = 12.0;
    let mut item = |w: &mut String, mark: String, label: &str| {
        let _ = writeln!(w, "<g transform=\"translate({lx:.1} {legend_y})\">{mark}<text x=\"16\" y=\"4\">{}</text></g>", esc(label));
        lx += 34.0 + label.chars().count() as f64 * 6.6;
    };
    item(w, format!(r##"<rect x="-2" y="-8" width="14" height="14" fill="{TURN}" stroke="#2b8a3e"/>"##), "turn (running)");
    item(w, r##"<path d="M5 -6 l5 6 l-5 6 l-5 -6 z" fill="#343a40"/>"##.into(), "break-point (tool result)");
    item(w, format!(r##"<circle cx="5" cy="0" r="4" fill="#ffffff" stroke="{PROMPT}" stroke-width="1.5"/>"##), "sent");
    item(w, format!(r#"<line x1="5" y1="-6" x2="5" y2="6" stroke="{PROMPT}" stroke-width="2"/>"#), "accepted (messageId)");
    item(w, format!(r#"<circle cx="5" cy="0" r="5.5" fill="{PROMPT}"/>"#), "delivered (user_message)");
    item(
        w,
        format!(
            r##"<rect x="1" y="-4" width="8" height="8" transform="rotate(45 5 0)" fill="#ffffff" stroke="{QUEUE}" stroke-width="1.5"/>"##
        ),
        "replaced",
    );
    item(w, format!(r#"<path d="M0 -5 l10 10 M0 5 l10 -10" stroke="{REVOKED}" stroke-width="2.5"/>"#), "revoked");
    let _ = writeln!(
        w,
        r#"<text x="12" y="{}"><tspan fill="{PROMPT}" font-weight="bold">prompt</tspan>  <tspan fill="{STEER}" font-weight="bold">steer</tspan> (at the next break-point)  <tspan fill="{QUEUE}" font-weight="bold">queue</tspan> (after the turn)</text>"#,
        legend_y + 24.0
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::PendingEntry;

    fn at(t: f64, state: &str) -> Event {
        Event::State { t, state: state.into(), stop_reason: None }
    }

    fn sent(t: f64, call: &str, mode: Option<&str>, text: &str) -> Event {
        Event::Sent { t, call: call.into(), mode: mode.map(Into::into), text: Some(text.into()), message_id: None }
    }

    fn answered(t: f64, call: &str, id: &str) -> Event {
        Event::Answered { t, call: call.into(), message_id: Some(id.into()) }
    }

    /// The smallest story: a prompt, a steer at a break-point, a queued message revoked.
    fn recording() -> Recording {
        let entry = |id: &str, mode: &str| PendingEntry { message_id: id.into(), mode: mode.into(), text: "x & <y>".into() };
        Recording {
            agent: vec!["acp-inject-agent".into(), "--delay-ms".into(), "100".into()],
            session_id: "sess_1".into(),
            events: vec![
                sent(0.0, "prompt", None, "go"),
                answered(1.0, "prompt", "msg_1"),
                Event::UserMessage { t: 1.0, message_id: "msg_1".into(), text: "go".into() },
                at(1.5, "running"),
                sent(100.0, "inject", Some("steer"), "steer <here>"),
                answered(101.0, "inject", "msg_2"),
                Event::Pending { t: 101.0, items: vec![entry("msg_2", "steer")] },
                sent(110.0, "inject", Some("queue"), "later"),
                answered(111.0, "inject", "msg_3"),
                Event::Pending { t: 111.0, items: vec![entry("msg_2", "steer"), entry("msg_3", "queue")] },
                Event::BreakPoint { t: 300.0, tool_call_id: "call_1".into() },
                Event::UserMessage { t: 300.5, message_id: "msg_2".into(), text: "steer <here>".into() },
                Event::Pending { t: 300.5, items: vec![entry("msg_3", "queue")] },
                Event::Sent { t: 310.0, call: "revoke".into(), mode: None, text: None, message_id: Some("msg_3".into()) },
                answered(311.0, "revoke", "msg_3"),
                Event::Pending { t: 311.0, items: vec![] },
                at(500.0, "idle"),
            ],
        }
    }

    #[test]
    fn the_picture_is_well_formed_svg_with_every_part() {
        let svg = svg(&recording());
        let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let texts: String = doc.descendants().filter(|n| n.is_text()).filter_map(|n| n.text()).collect();
        for wanted in
            ["turn 1", "break-point", "delivered at a break-point of turn 1", "revoked while pending", "steer <here>", "pending list"]
        {
            assert!(texts.contains(wanted), "no {wanted:?} in the picture");
        }
        // Three pending items over time, plus the turn bar and the legend's swatch.
        let boxes = doc.descendants().filter(|n| n.has_tag_name("rect") && n.attribute("fill-opacity") == Some("0.55")).count();
        assert_eq!(boxes, 4, "one box per pending item per interval");
    }

    #[test]
    fn axis_steps_are_round() {
        assert_eq!(tick_step(2400.0), 500.0);
        assert_eq!(tick_step(800.0), 100.0);
        assert_eq!(tick_step(3000.0), 500.0);
    }
}
