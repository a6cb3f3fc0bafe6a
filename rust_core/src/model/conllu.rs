//! CoNLL-U reading and writing.
//!
//! The reader keeps the columns a dependency parser needs (FORM, LEMMA, UPOS,
//! XPOS, FEATS, HEAD, DEPREL) of the basic word lines. Comment lines (`#`),
//! multiword-token ranges (`3-4`) and empty nodes (`8.1`) are skipped; the
//! `sent_id` comment, when present, becomes the sentence id. A malformed line
//! is an [`OmklError::Parse`] naming the source and the 1-based line number.
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

use crate::error::{OmklError, Result};

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
}

impl Sentence {
    /// The gold heads, or `None` if any is missing.
    pub fn heads(&self) -> Option<Vec<usize>> {
        self.tokens.iter().map(|t| t.head).collect()
    }
}

fn parse_err(source: &str, line: usize, reason: impl Into<String>) -> OmklError {
    OmklError::Parse {
        source_name: source.to_string(),
        line,
        reason: reason.into(),
    }
}

/// Reads every sentence from a buffered reader; `source_name` appears in
/// errors. HEAD values are not checked against the sentence length here
/// (see [`read_conllu_str`] and [`read_conllu_path`], which do).
pub fn read_conllu<R: BufRead>(reader: R, source_name: &str) -> Result<Vec<Sentence>> {
    let mut sentences = Vec::new();
    let mut current = Sentence::default();
    let mut pending_id: Option<String> = None;
    let mut line_no = 0usize;
    let finish = |cur: &mut Sentence, id: &mut Option<String>, out: &mut Vec<Sentence>| {
        if !cur.tokens.is_empty() {
            let mut s = std::mem::take(cur);
            s.id = id.take().unwrap_or_else(|| format!("{}", out.len() + 1));
            out.push(s);
        }
        *id = None;
    };
    for line in reader.lines() {
        line_no += 1;
        let line = line.map_err(|e| parse_err(source_name, line_no, e.to_string()))?;
        let line = line.trim_end_matches(['\r', '\n']);
        if line.trim().is_empty() {
            finish(&mut current, &mut pending_id, &mut sentences);
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            if let Some(rest) = comment.trim_start().strip_prefix("sent_id") {
                if let Some(v) = rest.trim_start().strip_prefix('=') {
                    pending_id = Some(v.trim().to_string());
                }
            }
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() != 10 {
            return Err(parse_err(
                source_name,
                line_no,
                format!("expected 10 tab-separated columns, got {}", cols.len()),
            ));
        }
        let id = cols[0];
        if id.contains('-') || id.contains('.') {
            continue; // multiword token range or empty node
        }
        let idx: usize = id
            .parse()
            .map_err(|_| parse_err(source_name, line_no, format!("ID `{id}` is not an integer")))?;
        if idx != current.tokens.len() + 1 {
            return Err(parse_err(
                source_name,
                line_no,
                format!("expected word ID {}, got {idx}", current.tokens.len() + 1),
            ));
        }
        let head = match cols[6] {
            "_" => None,
            h => Some(h.parse::<usize>().map_err(|_| {
                parse_err(
                    source_name,
                    line_no,
                    format!("HEAD `{h}` is not a non-negative integer"),
                )
            })?),
        };
        for (name, v) in [("FORM", cols[1]), ("UPOS", cols[3])] {
            if v.is_empty() {
                return Err(parse_err(source_name, line_no, format!("{name} is empty")));
            }
        }
        current.tokens.push(Token {
            form: cols[1].to_string(),
            lemma: cols[2].to_string(),
            upos: cols[3].to_string(),
            xpos: cols[4].to_string(),
            feats: cols[5].to_string(),
            head,
            deprel: cols[7].to_string(),
        });
    }
    finish(&mut current, &mut pending_id, &mut sentences);
    Ok(sentences)
}

/// Reads a CoNLL-U string (`source_name` appears in errors).
pub fn read_conllu_str(text: &str, source_name: &str) -> Result<Vec<Sentence>> {
    let sents = read_conllu(text.as_bytes(), source_name)?;
    check_head_ranges(text.as_bytes(), &sents, source_name)?;
    Ok(sents)
}

/// Reads a CoNLL-U file.
pub fn read_conllu_path(path: &Path) -> Result<Vec<Sentence>> {
    let name = path.display().to_string();
    let data = std::fs::read(path).map_err(|e| parse_err(&name, 0, e.to_string()))?;
    let sents = read_conllu(BufReader::new(&data[..]), &name)?;
    check_head_ranges(&data, &sents, &name)?;
    Ok(sents)
}

/// Second pass that reports a HEAD beyond the sentence length at its line.
fn check_head_ranges(data: &[u8], sents: &[Sentence], name: &str) -> Result<()> {
    let bad = sents.iter().any(|s| {
        s.tokens
            .iter()
            .any(|t| t.head.is_some_and(|h| h > s.tokens.len()))
    });
    if !bad {
        return Ok(());
    }
    // Locate the first offending line.
    let mut sent_i = 0usize;
    let mut in_sent = false;
    for (no, line) in data.split(|&b| b == b'\n').enumerate() {
        let line = String::from_utf8_lossy(line);
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            if in_sent {
                sent_i += 1;
                in_sent = false;
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        if cols[0].contains('-') || cols[0].contains('.') {
            continue;
        }
        in_sent = true;
        let n = sents[sent_i].tokens.len();
        if let Ok(h) = cols[6].parse::<usize>() {
            if h > n {
                return Err(parse_err(
                    name,
                    no + 1,
                    format!("HEAD {h} is out of range for a sentence of {n} words"),
                ));
            }
        }
    }
    Err(parse_err(name, 0, "HEAD out of range"))
}

/// Writes sentences as CoNLL-U. `heads[i]` / `labels[i]`, when given, replace
/// the HEAD / DEPREL columns of sentence `i`.
pub fn write_conllu<W: Write>(
    out: &mut W,
    sentences: &[Sentence],
    heads: Option<&[Vec<usize>]>,
    labels: Option<&[Vec<String>]>,
) -> Result<()> {
    let io = |e: std::io::Error| OmklError::invalid("out", e.to_string());
    for (i, s) in sentences.iter().enumerate() {
        let hs = heads.map(|h| &h[i]);
        let ls = labels.map(|l| &l[i]);
        if let Some(hs) = hs {
            if hs.len() != s.tokens.len() {
                return Err(OmklError::shape(
                    format!("heads[{i}]"),
                    format!("{} heads", s.tokens.len()),
                    format!("{}", hs.len()),
                ));
            }
        }
        if let Some(ls) = ls {
            if ls.len() != s.tokens.len() {
                return Err(OmklError::shape(
                    format!("labels[{i}]"),
                    format!("{} labels", s.tokens.len()),
                    format!("{}", ls.len()),
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
        assert!(e.starts_with("f.conllu:1:"), "{e}");
        let bad = "1\ta\ta\tX\tX\t_\t0\troot\t_\t_\n2\tb\tb\tX\tX\t_\tz\tdep\t_\t_\n";
        let e = read_conllu_str(bad, "f").unwrap_err().to_string();
        assert!(e.starts_with("f:2:") && e.contains("HEAD"), "{e}");
        let bad = "1\ta\ta\tX\tX\t_\t0\troot\t_\t_\n\n1\tb\tb\tX\tX\t_\t5\tdep\t_\t_\n";
        let e = read_conllu_str(bad, "f").unwrap_err().to_string();
        assert!(e.starts_with("f:3:") && e.contains("out of range"), "{e}");
        let bad = "2\ta\ta\tX\tX\t_\t0\troot\t_\t_\n";
        assert!(read_conllu_str(bad, "f").is_err());
    }

    #[test]
    fn write_then_read_round_trips() {
        let s = read_conllu_str(TEXT, "t").unwrap();
        let mut out = Vec::new();
        let heads = vec![vec![3, 3, 0], vec![0]];
        write_conllu(&mut out, &s, Some(&heads), None).unwrap();
        let back = read_conllu_str(std::str::from_utf8(&out).unwrap(), "o").unwrap();
        assert_eq!(back, s);
    }
}
