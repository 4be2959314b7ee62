//! Small text helpers shared by the projector and the replay of past answers.

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
