//! A tokenizer for Chinese, Japanese and Korean text: runs of CJK characters become
//! overlapping two-character pieces (a lone character stays itself), other words are split
//! as Tantivy's simple tokenizer splits them. No dictionary is needed, and a word of two or
//! more characters is found wherever it occurs (a phrase of pieces is a substring).

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// True for the characters cut into pieces: CJK ideographs, kana and Hangul.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF       // Hangul Jamo
        | 0x3040..=0x30FF     // Hiragana, Katakana
        | 0x3130..=0x318F     // Hangul compatibility Jamo
        | 0x31F0..=0x31FF     // Katakana phonetic extensions
        | 0x3400..=0x4DBF     // CJK extension A
        | 0x4E00..=0x9FFF     // CJK unified ideographs
        | 0xAC00..=0xD7AF     // Hangul syllables
        | 0xF900..=0xFAFF     // CJK compatibility ideographs
        | 0xFF66..=0xFF9F     // half-width Katakana
        | 0x20000..=0x3134F // CJK extensions B to G
    )
}

/// The CJK tokenizer (see the module documentation).
#[derive(Clone, Default)]
pub(crate) struct CjkTokenizer;

/// The tokens of one text, cut ahead of time.
pub(crate) struct CjkTokenStream {
    tokens: std::vec::IntoIter<Token>,
    current: Token,
}

impl Tokenizer for CjkTokenizer {
    type TokenStream<'a> = CjkTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CjkTokenStream {
        CjkTokenStream {
            tokens: cut(text).into_iter(),
            current: Token::default(),
        }
    }
}

impl TokenStream for CjkTokenStream {
    fn advance(&mut self) -> bool {
        match self.tokens.next() {
            Some(token) => {
                self.current = token;
                true
            }
            None => false,
        }
    }

    fn token(&self) -> &Token {
        &self.current
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.current
    }
}

/// Cuts `text` into words and two-character pieces, numbered in order.
fn cut(text: &str) -> Vec<Token> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let end_of = |i: usize| chars[i].0 + chars[i].1.len_utf8();
    let mut tokens = Vec::new();
    let mut push = |from: usize, to: usize| {
        tokens.push(Token {
            offset_from: from,
            offset_to: to,
            position: tokens.len(),
            text: text[from..to].to_owned(),
            position_length: 1,
        });
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        let start = i;
        if is_cjk(c) {
            while i < chars.len() && is_cjk(chars[i].1) {
                i += 1;
            }
            if i - start == 1 {
                push(chars[start].0, end_of(start));
            } else {
                for (j, (from, _)) in chars.iter().enumerate().take(i - 1).skip(start) {
                    push(*from, end_of(j + 1));
                }
            }
        } else if c.is_alphanumeric() {
            while i < chars.len() && chars[i].1.is_alphanumeric() && !is_cjk(chars[i].1) {
                i += 1;
            }
            push(chars[start].0, end_of(i - 1));
        } else {
            i += 1;
        }
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        cut(text).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn runs_of_cjk_become_overlapping_pairs() {
        assert_eq!(texts("東京都"), ["東京", "京都"]);
        assert_eq!(
            texts("私は東京に住んでいます"),
            [
                "私は", "は東", "東京", "京に", "に住", "住ん", "んで", "でい", "いま", "ます"
            ]
        );
        assert_eq!(texts("한국어"), ["한국", "국어"]);
    }

    #[test]
    fn a_lone_character_and_other_words_stay_whole() {
        assert_eq!(
            texts("王 said Deploy-v2 at 東京!"),
            ["王", "said", "Deploy", "v2", "at", "東京"]
        );
        assert!(texts("  ?! ").is_empty());
    }

    #[test]
    fn positions_and_offsets_follow_the_text() {
        let tokens = cut("ab 東京都");
        let described: Vec<(usize, usize, usize)> = tokens
            .iter()
            .map(|t| (t.position, t.offset_from, t.offset_to))
            .collect();
        assert_eq!(described, [(0, 0, 2), (1, 3, 9), (2, 6, 12)]);
    }
}
