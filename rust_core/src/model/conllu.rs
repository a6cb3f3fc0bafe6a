//! CoNLL-U reading and writing.
//!
//! The reader keeps the columns a dependency parser needs (FORM, LEMMA, UPOS,
//! XPOS, FEATS, HEAD, DEPREL) of the basic word lines. Comment lines (`#`),
//! multiword-token ranges (`N-M` with integers N < M) and empty nodes (`N.M`)
//! are skipped, and so is a UTF-8 byte order mark at the start; the `sent_id`
//! comment, when present, becomes the sentence id (else its 1-based index in
//! the source). A malformed line (any other ID included) is an
//! [`OmklError::Parse`] naming the source, the 1-based line number and the
//! sentence, and saying what was expected; a file that cannot be read is an
//! [`OmklError::Io`].
//!
//! # Complexity
//! Linear in the size of the input.
//!
//! # Example
//! ```
//! use omkl_core::model::conllu::{read_conllu_str, write_conllu};
//! let text = "# sent_id = s1\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n\n";
//! let sents = read_conllu_str(text, "inline").unwrap();
//! assert_eq!(sents[0].id, "s1");
//! assert_eq!(sents[0].tokens[0].head, Some(0));
//! let mut out = Vec::new();
//! write_conllu(&mut out, &sents, None, None).unwrap();
//! assert!(String::from_utf8(out).unwrap().contains("1\tHi\thi\tINTJ\tUH\t_\t0\troot"));
//! ```

use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use crate::error::{check_count, OmklError, Result};

/// One syntactic word of a sentence.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Token {
    pub form: String,
    pub lemma: String,
    pub upos: String,
    pub xpos: String,
    /// `_` or `Name=Value|Name=Value`.
    pub feats: String,
    /// Gold head (0 = root), `None` when the column is `_`.
    pub head: Option<usize>,
    /// Gold relation, `_` when absent.
    pub deprel: String,
}

/// A sentence: its id and its words (word `i` of CoNLL-U is `tokens[i - 1]`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sentence {
    pub id: String,
    pub tokens: Vec<Token>,
    /// 1-based line where the sentence starts in its source (its first
    /// comment or word line), 0 when it was not read from text.
    pub line: usize,
}

impl Sentence {
    /// The gold heads, or `None` if any is missing.
    pub fn heads(&self) -> Option<Vec<usize>> {
        self.tokens.iter().map(|t| t.head).collect()
    }

    /// The gold heads, checked to form a tree (see
    /// [`check_tree`](crate::model::parser::check_tree)). A missing head or a
    /// bad tree is an error naming the sentence; with `source`, it is an
    /// [`OmklError::Parse`] that also names the source and the sentence's
    /// first line.
    pub fn gold_tree(&self, source: Option<&str>) -> Result<Vec<usize>> {
        let at = |reason: String, name: &str| match source {
            Some(src) => parse_err(src, self.line, reason),
            None => OmklError::invalid(name, reason),
        };
        let Some(heads) = self.heads() else {
            let word = self
                .tokens
                .iter()
                .position(|t| t.head.is_none())
                .unwrap_or(0)
                + 1;
            let col = if source.is_some() {
                " (HEAD is `_`)"
            } else {
                ""
            };
            return Err(at(
                format!("sentence {:?}: word {word} has no gold head{col}", self.id),
                "corpus",
            ));
        };
        crate::model::parser_input::check_tree(&heads, &self.id).map_err(|e| match e {
            OmklError::InvalidValue { name, reason } => at(reason, &name),
            other => other,
        })?;
        Ok(heads)
    }
}

fn parse_err(source: &str, line: usize, reason: impl Into<String>) -> OmklError {
    OmklError::Parse {
        source_name: source.to_string(),
        line,
        reason: reason.into(),
    }
}

/// `s` as a non-negative integer: ASCII digits only (no sign, no spaces).
fn parse_uint(s: &str) -> Option<usize> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// What the ID column of a line holds.
enum LineId {
    /// A syntactic word `N`.
    Word(usize),
    /// A multiword token range `N-M` (N < M).
    Range,
    /// An empty node `N.M` (M >= 1).
    EmptyNode,
}

/// Classifies an ID; anything but `N`, `N-M` with N < M and `N.M` with
/// M >= 1 (non-negative decimal integers) is an error.
fn parse_id(id: &str) -> std::result::Result<LineId, String> {
    let bad = || {
        format!(
            "expected a word ID (N), a multiword range (N-M with N < M) \
             or an empty node (N.M), got ID `{id}`"
        )
    };
    if let Some((a, b)) = id.split_once('-') {
        return match (parse_uint(a), parse_uint(b)) {
            (Some(a), Some(b)) if 1 <= a && a < b => Ok(LineId::Range),
            _ => Err(bad()),
        };
    }
    if let Some((a, b)) = id.split_once('.') {
        return match (parse_uint(a), parse_uint(b)) {
            (Some(_), Some(b)) if b >= 1 => Ok(LineId::EmptyNode),
            _ => Err(bad()),
        };
    }
    parse_uint(id).map(LineId::Word).ok_or_else(bad)
}

/// The sentence being read, the line of each of its words (to report a
/// HEAD out of range) and its `sent_id`.
#[derive(Default)]
struct Pending {
    sentence: Sentence,
    word_lines: Vec<usize>,
    id: Option<String>,
}

impl Pending {
    /// The error at `line` of `source_name` in this sentence, the one after
    /// the `done` sentences already read: `sentence "ID": reason`, with its
    /// `sent_id` if one was read so far, else its 1-based index.
    fn error(&self, source_name: &str, line: usize, done: usize, reason: &str) -> OmklError {
        let id = self.id.clone().unwrap_or_else(|| (done + 1).to_string());
        parse_err(source_name, line, format!("sentence {id:?}: {reason}"))
    }

    /// Checks the heads of the sentence read so far, moves it (if it has
    /// words) to `out` and starts the next one.
    fn finish(&mut self, source_name: &str, out: &mut Vec<Sentence>) -> Result<()> {
        let n = self.sentence.tokens.len();
        for (t, &at) in self.sentence.tokens.iter().zip(&self.word_lines) {
            if let Some(h) = t.head.filter(|&h| h > n) {
                let reason = format!(
                    "HEAD {h} is out of range for a sentence of {n} words; \
                     expected 0 (the root) to {n}"
                );
                return Err(self.error(source_name, at, out.len(), &reason));
            }
        }
        let mut s = std::mem::take(self);
        if n > 0 {
            s.sentence.id = s.id.unwrap_or_else(|| format!("{}", out.len() + 1));
            out.push(s.sentence);
        }
        Ok(())
    }
}

/// Reads every sentence from a buffered reader; `source_name` appears in
/// errors. A UTF-8 byte order mark at the start is skipped. Besides the
/// layout of each line, the reader checks that word IDs count 1, 2, ...
/// within a sentence and that every HEAD is a word of the sentence (or 0)
/// other than the word itself; whether the heads form a tree is checked
/// when they are used for training ([`Sentence::gold_tree`]).
pub fn read_conllu<R: BufRead>(reader: R, source_name: &str) -> Result<Vec<Sentence>> {
    let mut sentences = Vec::new();
    let mut current = Pending::default();
    let mut line_no = 0usize;
    for line in reader.lines() {
        line_no += 1;
        let fail = |current: &Pending, reason: &str| {
            current.error(source_name, line_no, sentences.len(), reason)
        };
        let line = line.map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => {
                fail(&current, "the line is not valid UTF-8; expected UTF-8 text")
            }
            _ => OmklError::io(source_name, &e),
        })?;
        let mut line = line.trim_end_matches(['\r', '\n']);
        if line_no == 1 {
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        if line.trim().is_empty() {
            current.finish(source_name, &mut sentences)?;
            continue;
        }
        if current.sentence.line == 0 {
            current.sentence.line = line_no;
        }
        if let Some(comment) = line.strip_prefix('#') {
            if let Some(rest) = comment.trim_start().strip_prefix("sent_id") {
                if let Some(v) = rest.trim_start().strip_prefix('=') {
                    current.id = Some(v.trim().to_string());
                }
            }
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() != 10 {
            let reason = format!("expected 10 tab-separated columns, got {}", cols.len());
            return Err(fail(&current, &reason));
        }
        let idx = match parse_id(cols[0]).map_err(|r| fail(&current, &r))? {
            LineId::Word(idx) => idx,
            LineId::Range | LineId::EmptyNode => continue,
        };
        let next = current.sentence.tokens.len() + 1;
        if idx != next {
            return Err(fail(
                &current,
                &format!("expected word ID {next}, got {idx}"),
            ));
        }
        let head = match cols[6] {
            "_" => None,
            h => Some(parse_uint(h).ok_or_else(|| {
                let reason = if h.bytes().all(|b| b.is_ascii_digit()) {
                    format!("HEAD {h} is too large; expected 0 (the root) or a word ID")
                } else {
                    format!(
                        "HEAD `{h}` is not a non-negative integer; \
                         expected 0 (the root), a word ID or `_`"
                    )
                };
                fail(&current, &reason)
            })?),
        };
        if head == Some(idx) {
            let reason = format!(
                "HEAD of word {idx} is the word itself; expected 0 (the root) or another word's ID"
            );
            return Err(fail(&current, &reason));
        }
        for (name, v) in [("FORM", cols[1]), ("UPOS", cols[3])] {
            if v.is_empty() {
                let reason = format!("{name} is empty; expected a value or `_`");
                return Err(fail(&current, &reason));
            }
        }
        current.sentence.tokens.push(Token {
            form: cols[1].to_string(),
            lemma: cols[2].to_string(),
            upos: cols[3].to_string(),
            xpos: cols[4].to_string(),
            feats: cols[5].to_string(),
            head,
            deprel: cols[7].to_string(),
        });
        current.word_lines.push(line_no);
    }
    current.finish(source_name, &mut sentences)?;
    Ok(sentences)
}

/// Reads a CoNLL-U string (`source_name` appears in errors).
pub fn read_conllu_str(text: &str, source_name: &str) -> Result<Vec<Sentence>> {
    read_conllu(text.as_bytes(), source_name)
}

/// Reads a CoNLL-U file. A file that cannot be opened is an
/// [`OmklError::Io`] (its kind says whether it is missing); a malformed
/// one an [`OmklError::Parse`] naming the path and line.
pub fn read_conllu_path(path: &Path) -> Result<Vec<Sentence>> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| OmklError::io(&name, &e))?;
    read_conllu(BufReader::with_capacity(1 << 20, file), &name)
}

/// Writes sentences as CoNLL-U. `heads[i]` / `labels[i]`, when given, replace
/// the HEAD / DEPREL columns of sentence `i`; they must hold one list per
/// sentence and one entry per word.
pub fn write_conllu<W: Write>(
    out: &mut W,
    sentences: &[Sentence],
    heads: Option<&[Vec<usize>]>,
    labels: Option<&[Vec<String>]>,
) -> Result<()> {
    let io = |e: std::io::Error| OmklError::invalid("out", e.to_string());
    let n = sentences.len();
    for (name, len) in [
        ("heads", heads.map(<[_]>::len)),
        ("labels", labels.map(<[_]>::len)),
    ] {
        check_count(name, len.unwrap_or(n), n, "lists", " (one per sentence)")?;
    }
    for (i, s) in sentences.iter().enumerate() {
        let hs = heads.map(|h| &h[i]);
        let ls = labels.map(|l| &l[i]);
        let words = s.tokens.len();
        for (name, len) in [("heads", hs.map(Vec::len)), ("labels", ls.map(Vec::len))] {
            if let Some(len) = len.filter(|&len| len != words) {
                return Err(OmklError::shape(
                    format!("{name}[{i}]"),
                    format!("{words} {name}"),
                    len.to_string(),
                ));
            }
        }
        writeln!(out, "# sent_id = {}", s.id).map_err(io)?;
        for (j, t) in s.tokens.iter().enumerate() {
            let head = match hs {
                Some(h) => h[j].to_string(),
                None => t.head.map_or("_".to_string(), |h| h.to_string()),
            };
            let rel = ls.map_or(t.deprel.as_str(), |l| l[j].as_str());
            let blank = |v: &str| {
                if v.is_empty() {
                    "_".to_string()
                } else {
                    v.to_string()
                }
            };
            writeln!(
                out,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t_\t_",
                j + 1,
                t.form,
                blank(&t.lemma),
                t.upos,
                blank(&t.xpos),
                blank(&t.feats),
                head,
                blank(rel)
            )
            .map_err(io)?;
        }
        writeln!(out).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# newdoc\n# sent_id = a\n1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n\
1\tdo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_\n2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_\n\
3\tgo\tgo\tVERB\tVB\tVerbForm=Inf\t0\troot\t_\t_\n3.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t0:root\t_\n\n\
1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t_\t_\n";

    #[test]
    fn skips_comments_ranges_and_empty_nodes() {
        let s = read_conllu_str(TEXT, "t").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].id, "a");
        assert_eq!(s[0].tokens.len(), 3);
        assert_eq!(s[0].heads().unwrap(), vec![3, 3, 0]);
        assert_eq!(s[0].tokens[2].feats, "VerbForm=Inf");
        assert_eq!(s[1].id, "2");
    }

    #[test]
    fn malformed_lines_name_the_line() {
        let bad = "1\ta\ta\tX\tX\t_\t0\troot\t_\n";
        let e = read_conllu_str(bad, "f.conllu").unwrap_err().to_string();
        assert!(
            e.starts_with("f.conllu:1: sentence \"1\": expected 10"),
            "{e}"
        );
        let bad = "1\ta\ta\tX\tX\t_\t0\troot\t_\t_\n2\tb\tb\tX\tX\t_\tz\tdep\t_\t_\n";
        let e = read_conllu_str(bad, "f").unwrap_err().to_string();
        assert!(e.starts_with("f:2: sentence \"1\": HEAD `z`"), "{e}");
        assert!(e.contains("expected 0 (the root), a word ID or `_`"), "{e}");
        // the second sentence, without and with a sent_id
        let bad = "1\ta\ta\tX\tX\t_\t0\troot\t_\t_\n\n1\tb\tb\tX\tX\t_\t5\tdep\t_\t_\n";
        let e = read_conllu_str(bad, "f").unwrap_err().to_string();
        assert!(
            e.starts_with("f:3: sentence \"2\": HEAD 5 is out of range"),
            "{e}"
        );
        assert!(e.ends_with("expected 0 (the root) to 1"), "{e}");
        let named = bad.replace("\n\n", "\n\n# sent_id = s-7\n");
        let e = read_conllu_str(&named, "f").unwrap_err().to_string();
        assert!(e.starts_with("f:4: sentence \"s-7\": HEAD 5"), "{e}");
        let bad = "2\ta\ta\tX\tX\t_\t0\troot\t_\t_\n";
        assert!(read_conllu_str(bad, "f").is_err());
    }

    #[test]
    fn write_then_read_round_trips() {
        let s = read_conllu_str(TEXT, "t").unwrap();
        let mut out = Vec::new();
        let heads = vec![vec![3, 3, 0], vec![0]];
        write_conllu(&mut out, &s, Some(&heads), None).unwrap();
        let labels = vec![vec!["dep".to_string(); 3]];
        let e = write_conllu(&mut Vec::new(), &s, Some(&heads), Some(&labels)).unwrap_err();
        assert!(e.to_string().contains("`labels`: expected 2 lists"), "{e}");
        let e = write_conllu(&mut Vec::new(), &s, Some(&heads[..1]), None).unwrap_err();
        assert!(e.to_string().contains("`heads`: expected 2 lists"), "{e}");
        let short = vec![vec![3, 3], vec![0]];
        let e = write_conllu(&mut Vec::new(), &s, Some(&short), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "shape mismatch for `heads[0]`: expected 3 heads, got 2"
        );
        let back = read_conllu_str(std::str::from_utf8(&out).unwrap(), "o").unwrap();
        let strip = |v: &[Sentence]| -> Vec<(String, Vec<Token>)> {
            v.iter().map(|s| (s.id.clone(), s.tokens.clone())).collect()
        };
        assert_eq!(strip(&back), strip(&s));
        // the writer puts one `# sent_id` line before each sentence
        assert_eq!((back[0].line, back[1].line), (1, 6));
    }

    /// `n` words in a chain `1 <- 2 <- ... <- n <- root` with the given IDs.
    fn lines(ids: &[&str]) -> String {
        let mut w = 0;
        let mut out = String::new();
        for id in ids {
            let head = if id.contains(['-', '.']) {
                "_".to_string()
            } else {
                w += 1;
                if w == ids.iter().filter(|i| !i.contains(['-', '.'])).count() {
                    "0".to_string()
                } else {
                    (w + 1).to_string()
                }
            };
            out.push_str(&format!("{id}\tw\tw\tX\tX\t_\t{head}\tdep\t_\t_\n"));
        }
        out
    }

    #[test]
    fn only_integer_ranges_and_empty_nodes_are_skipped() {
        let ok = read_conllu_str(&lines(&["1-2", "1", "2", "2.1", "3", "0.1"]), "f").unwrap();
        assert_eq!(ok[0].tokens.len(), 3);
        assert_eq!(ok[0].heads().unwrap(), vec![2, 3, 0]);
        for bad in [
            "x-y", "-1", "1.2.3", "2-1", "1-1", "0-1", "1-", "1.", ".1", "1.0", "1.x",
        ] {
            let text = format!("# sent_id = a\n{}", lines(&["1", bad, "2"]));
            let e = read_conllu_str(&text, "f.conllu").unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.starts_with("f.conllu:3: sentence \"a\": expected a word ID (N)")
                    && msg.ends_with(&format!("got ID `{bad}`")),
                "{bad}: {msg}"
            );
            assert!(
                matches!(e, OmklError::Parse { line: 3, .. }),
                "{bad}: {e:?}"
            );
        }
        for bad in ["+1", "x", "", "1 ", "１"] {
            let e = read_conllu_str(&lines(&[bad]), "f")
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("f:1: sentence \"1\": expected a word ID")
                    && e.ends_with(&format!("got ID `{bad}`")),
                "{bad:?}: {e}"
            );
        }
    }

    #[test]
    fn heads_must_be_plain_integers_other_than_the_word() {
        for (head, what) in [
            ("+2", "not a non-negative"),
            ("-1", "not a non-negative"),
            ("2.0", "not a non-negative"),
            ("1", "itself"),
        ] {
            let text =
                format!("1\ta\ta\tX\tX\t_\t{head}\tdep\t_\t_\n2\tb\tb\tX\tX\t_\t0\troot\t_\t_\n");
            let e = read_conllu_str(&text, "f").unwrap_err().to_string();
            assert!(e.starts_with("f:1:") && e.contains(what), "{head}: {e}");
        }
    }

    #[test]
    fn a_leading_byte_order_mark_is_skipped() {
        let text = format!("\u{feff}{TEXT}");
        let with = read_conllu_str(&text, "t").unwrap();
        assert_eq!(with, read_conllu_str(TEXT, "t").unwrap());
        assert_eq!(with[0].line, 1);
        // only at the very start: elsewhere it is part of the ID
        let text = format!("{}\u{feff}{}", lines(&["1"]), lines(&["2"]));
        assert!(read_conllu_str(&text, "t")
            .unwrap_err()
            .to_string()
            .starts_with("t:2:"));
    }

    #[test]
    fn sentences_record_their_first_line() {
        let s = read_conllu_str(TEXT, "t").unwrap();
        assert_eq!((s[0].line, s[1].line), (1, 9));
        let s = read_conllu_str(&format!("\n\n{}", lines(&["1"])), "t").unwrap();
        assert_eq!(s[0].line, 3);
    }

    #[test]
    fn bad_gold_trees_name_source_sentence_and_line() {
        let cyc = "# sent_id = c\n1\ta\ta\tX\tX\t_\t2\tdep\t_\t_\n2\tb\tb\tX\tX\t_\t1\tdep\t_\t_\n";
        let text = format!("{}\n{cyc}", lines(&["1", "2"]));
        let s = read_conllu_str(&text, "f.conllu").unwrap();
        assert_eq!(s[0].gold_tree(Some("f.conllu")).unwrap(), vec![2, 0]);
        let e = s[1].gold_tree(Some("f.conllu")).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("f.conllu:4: sentence \"c\"") && msg.contains("cycle"),
            "{msg}"
        );
        assert!(matches!(e, OmklError::Parse { line: 4, .. }));
        let e = s[1].gold_tree(None).unwrap_err();
        assert!(matches!(e, OmklError::InvalidValue { .. }), "{e:?}");
        let missing = "1\ta\ta\tX\tX\t_\t2\tdep\t_\t_\n2\tb\tb\tX\tX\t_\t_\t_\t_\t_\n";
        let s = read_conllu_str(missing, "g").unwrap();
        let msg = s[0].gold_tree(Some("g")).unwrap_err().to_string();
        assert!(
            msg.starts_with("g:1: sentence \"1\": word 2 has no gold head"),
            "{msg}"
        );
    }

    #[test]
    fn a_missing_file_is_an_io_error_of_kind_not_found() {
        let e = read_conllu_path(Path::new("/nonexistent/omkl/x.conllu")).unwrap_err();
        assert!(
            matches!(
                e,
                OmklError::Io {
                    kind: std::io::ErrorKind::NotFound,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().starts_with("/nonexistent/omkl/x.conllu: "));
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let mut bytes = lines(&["1"]).into_bytes();
        bytes.extend_from_slice(b"2\t\xff\tw\tX\tX\t_\t0\tdep\t_\t_\n");
        let e = read_conllu(&bytes[..], "f").unwrap_err().to_string();
        assert!(e.starts_with("f:2:") && e.contains("UTF-8"), "{e}");
    }
}
