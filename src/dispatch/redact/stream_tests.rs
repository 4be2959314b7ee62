use super::*;
use serde_json::{Value, json};

const SECRET: &str = "tok-S3CRET-value-42";
const BLOCK: &str = "VF-PRIVATE-FILE-RANGES/1\n[{\"end\":2,\"file\":\"sec.txt\",\"start\":2,\"text\":\"PRIVATE-LINE-0123\\n\"}]";

fn stream() -> Stream<usize> {
    let r = Redactor::with_secrets(&[BLOCK.to_string()], &[SECRET.to_string()]);
    Stream::new(Arc::new(r))
}

fn chunk(text: &str) -> Vec<u8> {
    let v = json!({"jsonrpc":"2.0","method":"session/update","params":{"update":{
        "sessionUpdate":"agent_message_chunk","content":{"type":"text","text":text}}}});
    v.to_string().into_bytes()
}

fn text_of(line: &[u8]) -> String {
    let v: Value = serde_json::from_slice(line).unwrap();
    v["params"]["update"]["content"]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Every line pushed, then the end: what comes out, in order.
fn run(s: &mut Stream<usize>, lines: Vec<(Vec<u8>, bool)>) -> Vec<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    for (i, (line, follows)) in lines.into_iter().enumerate() {
        out.extend(s.push(line, i, follows));
    }
    out.extend(s.finish());
    out
}

/// The secret, or the private line, split at every byte across two frames
/// (with text before it): no frame out holds any of it, the frames stay in
/// order, and the text before it is kept.
#[test]
fn a_secret_split_across_two_frames_is_cut_at_every_position() {
    let echo = format!("You said: key {SECRET} and\n\n{BLOCK}\nbye");
    for k in 1..echo.len() {
        if !echo.is_char_boundary(k) {
            continue;
        }
        let (a, b) = echo.split_at(k);
        let out = run(&mut stream(), vec![(chunk(a), true), (chunk(b), true)]);
        assert_eq!(out.iter().map(|o| o.1).collect::<Vec<_>>(), [0, 1]);
        let joined: String = out.iter().map(|(l, _)| text_of(l)).collect();
        for gone in [SECRET, "S3CRET", "PRIVATE-LINE", "0123"] {
            assert!(!joined.contains(gone), "split at {k}: {joined}");
        }
        // (The per-line rules cut a header to the end of its string.)
        assert!(
            joined.starts_with("You said: key "),
            "split at {k}: {joined}"
        );
    }
}

/// Short pieces: a secret in three frames, one of them a single byte.
#[test]
fn a_secret_in_three_frames_with_short_pieces_is_cut() {
    for (i, j) in [(1, 2), (3, 4), (4, 18), (17, 18)] {
        let parts = [
            format!("a {}", &SECRET[..i]),
            SECRET[i..j].to_string(),
            format!("{} z", &SECRET[j..]),
        ];
        let lines = parts.iter().map(|p| (chunk(p), true)).collect();
        let out = run(&mut stream(), lines);
        let joined: String = out.iter().map(|(l, _)| text_of(l)).collect();
        let once = joined.replace(&format!("{REDACTED}{REDACTED}"), REDACTED);
        assert_eq!(
            once.replace(&format!("{REDACTED}{REDACTED}"), REDACTED),
            format!("a {REDACTED} z"),
            "{i}/{j}"
        );
    }
}

/// Text lines (stderr, text mode): the newline between them is part of the
/// stream, so a block split over lines at any point is caught.
#[test]
fn a_secret_split_across_text_lines_is_cut() {
    for k in 1..SECRET.len() {
        let lines = vec![
            (format!("echo {}", &SECRET[..k]).into_bytes(), true),
            (format!("{} done", &SECRET[k..]).into_bytes(), true),
        ];
        let out = run(&mut stream(), lines);
        let text: Vec<String> = out
            .iter()
            .map(|(l, _)| String::from_utf8(l.clone()).unwrap())
            .collect();
        assert_eq!(
            text,
            [format!("echo {REDACTED}"), format!("{REDACTED} done")],
            "{k}"
        );
    }
}

/// A line whose end only looks like a secret's beginning is held until the
/// next line, then goes out as it was; other lines are never held; lines
/// that do not follow the stream keep their place.
#[test]
fn only_a_possible_beginning_is_held_and_only_until_the_next_line() {
    let r = Redactor::with_secrets(&[], &["qz-SECRET-77".to_string()]);
    let mut s = Stream::new(Arc::new(r));
    assert_eq!(s.push(chunk("plain"), 0, true).len(), 1);
    // "qz" begins the secret: held.
    assert!(s.push(chunk("a qz"), 1, true).is_empty());
    // vf's own line waits behind it.
    assert!(s.push(b"{\"dir\":\"out\"}".to_vec(), 2, false).is_empty());
    let out = s.push(chunk("-SEC ok"), 3, true);
    let order: Vec<_> = out.iter().map(|o| o.1).collect();
    assert_eq!(order, [1, 2, 3]);
    assert_eq!(text_of(&out[0].0), "a qz");
    assert_eq!(text_of(&out[2].0), "-SEC ok");
    assert!(s.finish().is_empty());
    // Held at the end of the stream: out as it was.
    assert!(s.push(chunk("b qz-SEC"), 4, true).is_empty());
    let out = s.finish();
    assert_eq!(text_of(&out[0].0), "b qz-SEC");
    // Without secrets nothing is ever held.
    let mut none: Stream<()> = Stream::new(Arc::new(Redactor::new(&[])));
    assert_eq!(none.push(b"VF-".to_vec(), (), true).len(), 1);
}
