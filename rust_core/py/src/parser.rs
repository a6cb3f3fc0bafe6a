//! Python binding for the dependency parser (`omkl_core::model::parser`) and
//! CoNLL-U I/O (`omkl_core::model::conllu`).

use std::path::PathBuf;

use omkl_core::features::arc_templates::{default_templates, WordAtoms, HASH_NAME, HASH_SEED};
use omkl_core::features::stacked::{tree_feats, with_tree_feats};
use omkl_core::learner::spec::parse_regularizer;
use omkl_core::model::conllu::{read_conllu_path, write_conllu, Sentence, Token};
use omkl_core::model::parser::{ArcParser, ParserConfig, ParserInput, TreeDecoder, FORMAT_VERSION};
use omkl_core::model::parser_decode::nonprojective_arcs;
use omkl_core::model::parser_labels::ArcLabeler;
use omkl_core::model::parser_prune::ArcPruner;
use omkl_core::OmklError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::convert::{add_functions, ensure_shape};
use crate::errors::IntoPyResult;

/// `(form, lemma, upos, xpos, feats)` of one word.
type TokenTuple = (String, String, String, String, String);

fn token_dict<'py>(py: Python<'py>, i: usize, t: &Token) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", i + 1)?;
    d.set_item("form", &t.form)?;
    d.set_item("lemma", &t.lemma)?;
    d.set_item("upos", &t.upos)?;
    d.set_item("xpos", &t.xpos)?;
    d.set_item("feats", &t.feats)?;
    d.set_item("head", t.head)?;
    d.set_item("deprel", &t.deprel)?;
    Ok(d)
}

/// Reads a CoNLL-U file into `[(sent_id, [token dict, ...]), ...]`. With
/// `check_trees`, the gold heads of each sentence that has them all must
/// form a tree; with `require_heads`, every word must have a gold head and
/// every sentence's heads a tree. Else an `omkl.ParseError` names the file,
/// the sentence's first line and its id.
#[pyfunction]
#[pyo3(signature = (path, check_trees=false, require_heads=false))]
fn read_conllu_file<'py>(
    py: Python<'py>,
    path: PathBuf,
    check_trees: bool,
    require_heads: bool,
) -> PyResult<Vec<(String, Vec<Bound<'py, PyDict>>)>> {
    let source = path.display().to_string();
    let sents = py
        .detach(|| -> omkl_core::Result<Vec<Sentence>> {
            let sents = read_conllu_path(&path)?;
            for s in &sents {
                if require_heads || (check_trees && s.heads().is_some()) {
                    s.gold_tree(Some(&source))?;
                }
            }
            Ok(sents)
        })
        .py()?;
    sents
        .iter()
        .map(|s| {
            let toks = s
                .tokens
                .iter()
                .enumerate()
                .map(|(i, t)| token_dict(py, i, t))
                .collect::<PyResult<Vec<_>>>()?;
            Ok((s.id.clone(), toks))
        })
        .collect()
}

fn to_input(id: &str, tokens: &[TokenTuple]) -> ParserInput {
    ParserInput {
        id: id.to_string(),
        words: tokens
            .iter()
            .map(|(f, l, u, x, m)| WordAtoms::new(f, l, u, x, m))
            .collect(),
    }
}

/// A corpus held on the Rust side: sentences, their prepared words and gold
/// heads (when every word has one).
#[pyclass(module = "omkl._omkl")]
pub struct ParseCorpus {
    sentences: Vec<Sentence>,
    inputs: Vec<ParserInput>,
    /// The file the sentences were read from, named in errors about them.
    source: Option<String>,
}

fn build_corpus(sentences: Vec<Sentence>, source: Option<String>) -> ParseCorpus {
    let inputs = sentences
        .iter()
        .map(|s| ParserInput {
            id: s.id.clone(),
            words: s
                .tokens
                .iter()
                .map(|t| WordAtoms::new(&t.form, &t.lemma, &t.upos, &t.xpos, &t.feats))
                .collect(),
        })
        .collect();
    ParseCorpus {
        sentences,
        inputs,
        source,
    }
}

impl ParseCorpus {
    /// An error unless `n` (the number of head lists) is one per sentence.
    fn check_heads_len(&self, n: usize) -> PyResult<()> {
        let m = self.sentences.len();
        ensure_shape(n == m, "heads", format!("{m} sentences"), n)
    }
}

#[pymethods]
impl ParseCorpus {
    /// Reads a CoNLL-U file.
    #[staticmethod]
    fn from_path(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let source = path.display().to_string();
        py.detach(|| read_conllu_path(&path).map(|s| build_corpus(s, Some(source))))
            .py()
    }

    /// Builds a corpus from `(form, lemma, upos, xpos, feats)` tuples and
    /// optional gold heads (`None` for a word without one) and relations.
    #[staticmethod]
    #[pyo3(signature = (ids, sentences, heads=None, deprels=None))]
    fn from_tokens(
        ids: Vec<String>,
        sentences: Vec<Vec<TokenTuple>>,
        heads: Option<Vec<Vec<Option<usize>>>>,
        deprels: Option<Vec<Vec<String>>>,
    ) -> PyResult<Self> {
        let n = sentences.len();
        if ids.len() != n
            || heads.as_ref().is_some_and(|h| h.len() != n)
            || deprels.as_ref().is_some_and(|d| d.len() != n)
        {
            return Err(OmklError::shape(
                "ids/heads/deprels",
                format!("{n} entries (one per sentence)"),
                "a different count",
            ))
            .py();
        }
        let mut out = Vec::with_capacity(n);
        for (i, toks) in sentences.into_iter().enumerate() {
            let hs = heads.as_ref().map(|h| &h[i]);
            let ds = deprels.as_ref().map(|d| &d[i]);
            if hs.is_some_and(|h| h.len() != toks.len())
                || ds.is_some_and(|d| d.len() != toks.len())
            {
                return Err(OmklError::shape(
                    "heads",
                    format!("{} entries for sentence {:?}", toks.len(), ids[i]),
                    "a different count",
                ))
                .py();
            }
            let tokens = toks
                .into_iter()
                .enumerate()
                .map(|(j, (form, lemma, upos, xpos, feats))| Token {
                    form,
                    lemma,
                    upos,
                    xpos,
                    feats,
                    head: hs.and_then(|h| h[j]),
                    deprel: ds.map_or("_".to_string(), |d| d[j].clone()),
                })
                .collect();
            out.push(Sentence {
                id: ids[i].clone(),
                tokens,
                line: 0,
            });
        }
        Ok(build_corpus(out, None))
    }

    fn __len__(&self) -> usize {
        self.sentences.len()
    }

    /// The sentences at `indices`, in that order (an index may repeat).
    fn select(&self, indices: Vec<usize>) -> PyResult<Self> {
        let n = self.sentences.len();
        if let Some(&i) = indices.iter().find(|&&i| i >= n) {
            return Err(OmklError::invalid(
                "indices",
                format!("sentence index {i}; expected 0..{n}"),
            ))
            .py();
        }
        Ok(ParseCorpus {
            sentences: indices.iter().map(|&i| self.sentences[i].clone()).collect(),
            inputs: indices.iter().map(|&i| self.inputs[i].clone()).collect(),
            source: self.source.clone(),
        })
    }

    /// This corpus's sentences followed by `other`'s (the source of this
    /// corpus is kept).
    fn concat(&self, other: &ParseCorpus) -> Self {
        let mut sentences = self.sentences.clone();
        sentences.extend(other.sentences.iter().cloned());
        let mut inputs = self.inputs.clone();
        inputs.extend(other.inputs.iter().cloned());
        ParseCorpus {
            sentences,
            inputs,
            source: self.source.clone(),
        }
    }

    /// The same sentences, each word's FEATS extended with the features of
    /// a first-stage tree (`omkl_core::features::stacked`): `heads` and
    /// `deprels` per sentence, as predicted by the first stage.
    fn stacked(&self, heads: Vec<Vec<usize>>, deprels: Vec<Vec<String>>) -> PyResult<Self> {
        self.check_heads_len(heads.len())?;
        let m = self.sentences.len();
        ensure_shape(
            deprels.len() == m,
            "deprels",
            format!("{m} sentences"),
            deprels.len(),
        )?;
        let mut sentences = self.sentences.clone();
        for (k, sent) in sentences.iter_mut().enumerate() {
            let upos: Vec<&str> = sent.tokens.iter().map(|t| t.upos.as_str()).collect();
            let rels: Vec<&str> = deprels[k].iter().map(String::as_str).collect();
            let extra = tree_feats(&upos, &heads[k], &rels)
                .map_err(|e| OmklError::invalid("heads", format!("sentence {:?}: {e}", sent.id)))
                .py()?;
            for (t, x) in sent.tokens.iter_mut().zip(&extra) {
                t.feats = with_tree_feats(&t.feats, x);
            }
        }
        Ok(build_corpus(sentences, self.source.clone()))
    }

    /// Sentence ids.
    fn ids(&self) -> Vec<String> {
        self.sentences.iter().map(|s| s.id.clone()).collect()
    }

    /// Gold heads of every sentence (`None` where a head is missing).
    fn gold_heads(&self) -> Vec<Option<Vec<usize>>> {
        self.sentences.iter().map(|s| s.heads()).collect()
    }

    /// An error unless every word has a gold head: the first sentence with
    /// a missing head is named (with the file and its first line when the
    /// corpus was read from a file, as `omkl.ParseError`).
    fn require_gold_heads(&self) -> PyResult<()> {
        match self.sentences.iter().find(|s| s.heads().is_none()) {
            Some(s) => s.gold_tree(self.source.as_deref()).map(|_| ()).py(),
            None => Ok(()),
        }
    }

    /// `(non-projective arcs, arcs)` of each sentence's gold tree (`None`
    /// where a head is missing; see `nonprojective_arcs` of the core).
    fn nonprojective_arcs(&self) -> Vec<Option<(usize, usize)>> {
        self.sentences
            .iter()
            .map(|s| s.heads().map(|h| (nonprojective_arcs(&h), h.len())))
            .collect()
    }

    /// Gold relations of every sentence.
    fn deprels(&self) -> Vec<Vec<String>> {
        self.sentences
            .iter()
            .map(|s| s.tokens.iter().map(|t| t.deprel.clone()).collect())
            .collect()
    }

    /// UPOS tags of every sentence.
    fn upos(&self) -> Vec<Vec<String>> {
        self.sentences
            .iter()
            .map(|s| s.tokens.iter().map(|t| t.upos.clone()).collect())
            .collect()
    }

    /// Writes the corpus as CoNLL-U with the given heads (and relations).
    #[pyo3(signature = (path, heads, deprels=None))]
    fn write_conllu(
        &self,
        py: Python<'_>,
        path: PathBuf,
        heads: Vec<Vec<usize>>,
        deprels: Option<Vec<Vec<String>>>,
    ) -> PyResult<()> {
        self.check_heads_len(heads.len())?;
        py.detach(|| {
            let mut buf = Vec::new();
            write_conllu(&mut buf, &self.sentences, Some(&heads), deprels.as_deref())?;
            std::fs::write(&path, buf).map_err(|e| OmklError::invalid("path", e.to_string()))
        })
        .py()
    }
}

/// The sentences of `corpus` in `order` with their gold heads, every gold
/// tree checked before any update.
pub(crate) fn gold_batch(
    corpus: &ParseCorpus,
    order: Option<Vec<usize>>,
) -> PyResult<Vec<(&ParserInput, Vec<usize>)>> {
    let n = corpus.inputs.len();
    let order = order.unwrap_or_else(|| (0..n).collect());
    let mut batch = Vec::with_capacity(order.len());
    for &i in &order {
        let s = corpus.inputs.get(i).ok_or_else(|| {
            OmklError::invalid(
                "order",
                format!("index {i} is out of range for {n} sentences"),
            )
        });
        let s = s.py()?;
        let heads = corpus.sentences[i]
            .gold_tree(corpus.source.as_deref())
            .py()?;
        batch.push((s, heads));
    }
    Ok(batch)
}

/// The arc-factored parser (see `omkl.DependencyParser`).
#[pyclass(module = "omkl._omkl")]
pub struct ArcParserCore {
    pub(crate) inner: ArcParser,
}

fn make_config(
    regularizer: &str,
    lam: f64,
    eta: f64,
    decoder: &str,
) -> omkl_core::Result<ParserConfig> {
    let name = match regularizer {
        "l2" => "l2_squared",
        "mkl" => "squared_l21",
        other => {
            return Err(OmklError::invalid(
                "regularizer",
                format!("expected \"l2\" or \"mkl\", got {other:?}"),
            ))
        }
    };
    Ok(ParserConfig {
        regularizer: parse_regularizer(name, &[lam])?,
        eta,
        decoder: TreeDecoder::from_name(decoder)?,
    })
}

impl ArcParserCore {
    /// Runs `f` on the trained pruner and the gold trees of `corpus`, with
    /// the GIL released; an error if the parser has no trained pruner.
    fn on_trained_pruner<T: Send>(
        &self,
        py: Python<'_>,
        corpus: &ParseCorpus,
        f: impl FnOnce(&ArcPruner, &[(ParserInput, Vec<usize>)]) -> T + Send,
    ) -> PyResult<T> {
        let gold: Vec<(ParserInput, Vec<usize>)> = gold_batch(corpus, None)?
            .into_iter()
            .map(|(s, h)| (s.clone(), h))
            .collect();
        py.detach(|| match self.inner.pruner() {
            Some(p) if p.is_trained() => Ok(f(p, &gold)),
            _ => Err(OmklError::invalid(
                "pruner",
                "the parser has no trained pruner",
            )),
        })
        .py()
    }
}

#[pymethods]
impl ArcParserCore {
    #[new]
    #[pyo3(signature = (regularizer="l2", lam=1e-6, eta=0.003, decoder="chu-liu-edmonds", templates=None, prune_k=20))]
    fn new(
        regularizer: &str,
        lam: f64,
        eta: f64,
        decoder: &str,
        templates: Option<Vec<usize>>,
        prune_k: usize,
    ) -> PyResult<Self> {
        let config = make_config(regularizer, lam, eta, decoder).py()?;
        let mut inner = ArcParser::with_templates(config, templates.as_deref()).py()?;
        inner.set_pruner(prune_k).py()?;
        Ok(ArcParserCore { inner })
    }

    /// One online step; returns the hinge loss before the step.
    fn learn_one(
        &mut self,
        py: Python<'_>,
        sentence_id: &str,
        tokens: Vec<TokenTuple>,
        heads: Vec<usize>,
    ) -> PyResult<f64> {
        let input = to_input(sentence_id, &tokens);
        py.detach(|| self.inner.learn_one(&input, &heads)).py()
    }

    /// Predicted heads of one sentence.
    fn predict_one(
        &self,
        py: Python<'_>,
        sentence_id: &str,
        tokens: Vec<TokenTuple>,
    ) -> PyResult<Vec<usize>> {
        let input = to_input(sentence_id, &tokens);
        py.detach(|| self.inner.predict(&input)).py()
    }

    /// One epoch over `corpus` in the order `order` (all sentences in file
    /// order when `None`). `progress(done)` is called between chunks, with
    /// the GIL held; keyboard interrupts are honoured there. With
    /// `first_pass`, the epoch trains the arc pruner instead.
    #[pyo3(signature = (corpus, order=None, progress=None, first_pass=false))]
    fn fit_epoch(
        &mut self,
        py: Python<'_>,
        corpus: &ParseCorpus,
        order: Option<Vec<usize>>,
        progress: Option<Bound<'_, PyAny>>,
        first_pass: bool,
    ) -> PyResult<f64> {
        let batch = gold_batch(corpus, order)?;
        if first_pass && self.inner.pruner().is_none() {
            return Err(OmklError::invalid(
                "first_pass",
                "the parser has no pruner (prune_k = 0)",
            ))
            .py();
        }
        let mut total = 0.0;
        for (c, chunk) in batch.chunks(256).enumerate() {
            total += py
                .detach(|| {
                    if first_pass {
                        return self.inner.fit_pruner_chunk(chunk);
                    }
                    let refs: Vec<(&ParserInput, &[usize])> =
                        chunk.iter().map(|(s, h)| (*s, h.as_slice())).collect();
                    self.inner.fit_batch(&refs)
                })
                .py()?;
            py.check_signals()?;
            if let Some(cb) = &progress {
                cb.call1(((c * 256 + chunk.len()).min(batch.len()),))?;
            }
        }
        py.detach(|| {
            if first_pass {
                self.inner.end_pruner_epoch()
            } else {
                self.inner.end_epoch()
            }
        })
        .py()?;
        Ok(total)
    }

    /// Fits the table sizes to the distinct features of the corpus's gold
    /// arcs (only before the first step).
    #[pyo3(signature = (corpus, slots_per_feature=1.0, max_bits=15))]
    fn fit_table_sizes(
        &mut self,
        py: Python<'_>,
        corpus: &ParseCorpus,
        slots_per_feature: f64,
        max_bits: u32,
    ) -> PyResult<()> {
        let batch = gold_batch(corpus, None)?;
        py.detach(|| {
            self.inner
                .fit_table_sizes(&batch, slots_per_feature, max_bits)
        })
        .py()
    }

    /// `(kept gold arcs, gold arcs)` of the trained pruner on `corpus`.
    fn pruner_recall(&self, py: Python<'_>, corpus: &ParseCorpus) -> PyResult<(usize, usize)> {
        self.on_trained_pruner(py, corpus, |p, gold| p.recall(gold))
    }

    /// The rank of every gold arc of `corpus` among its word's candidate
    /// heads by the trained pruner's score (0 = best), in corpus order; the
    /// pruner's recall at `k` is the share of ranks below `k`.
    fn pruner_gold_ranks(&self, py: Python<'_>, corpus: &ParseCorpus) -> PyResult<Vec<u32>> {
        self.on_trained_pruner(py, corpus, |p, gold| p.gold_ranks(gold))
    }

    /// `(kept gold arcs, gold arcs, kept arcs, candidate arcs)` of the
    /// trained pruner on `corpus` (its recall and the share of arcs the
    /// full model scores).
    fn pruner_stats(&self, py: Python<'_>, corpus: &ParseCorpus) -> PyResult<[usize; 4]> {
        self.on_trained_pruner(py, corpus, |p, gold| p.stats(gold))
    }

    /// The tree decoder's name.
    #[getter]
    fn decoder(&self) -> &'static str {
        self.inner.config.decoder.name()
    }

    /// Sets the tree decoder (`"chu-liu-edmonds"` or `"eisner"`).
    #[setter]
    fn set_decoder(&mut self, name: &str) -> PyResult<()> {
        self.inner.config.decoder = TreeDecoder::from_name(name).py()?;
        Ok(())
    }

    /// Sets the pruner's score margin: a word keeps its candidate heads
    /// within `margin` of its best, at most `prune_k` (`inf` = top k).
    fn set_prune_margin(&mut self, margin: f64) -> PyResult<()> {
        self.inner.set_pruner_margin(margin).py()
    }

    /// The pruner's score margin (`inf` = top k; `None` without a pruner).
    fn prune_margin(&self) -> Option<f64> {
        self.inner.pruner().map(|p| p.margin())
    }

    /// Heads kept per word by the pruner (0 = no pruner).
    fn prune_k(&self) -> usize {
        self.inner.pruner().map_or(0, |p| p.k())
    }

    /// Predicted heads of every sentence of `corpus` (in parallel).
    fn predict_corpus(&self, py: Python<'_>, corpus: &ParseCorpus) -> PyResult<Vec<Vec<usize>>> {
        py.detach(|| self.inner.predict_many(&corpus.inputs)).py()
    }

    /// β_t = ‖θ_t‖ / Σ‖θ‖ of the current iterate.
    fn template_weights(&self) -> Vec<f64> {
        self.inner.template_weights()
    }

    /// The arc score matrices `(n+1) x (n+1)` (row = head, column =
    /// modifier) that prediction decodes, one per sentence of `corpus` (in
    /// parallel).
    fn score_matrices(&self, py: Python<'_>, corpus: &ParseCorpus) -> PyResult<Vec<Vec<f64>>> {
        use rayon::prelude::*;
        py.detach(|| {
            corpus
                .inputs
                .par_iter()
                .map(|s| self.inner.score_matrix(s))
                .collect::<omkl_core::Result<Vec<_>>>()
        })
        .py()
    }

    /// β of the averaged parameters (`None` before the first epoch ends).
    fn averaged_template_weights(&self) -> Option<Vec<f64>> {
        self.inner.averaged_template_weights()
    }

    /// β after each epoch.
    fn beta_trajectory(&self) -> Vec<Vec<f64>> {
        self.inner.beta_trajectory.clone()
    }

    /// Names of the parser's templates.
    fn template_names(&self) -> Vec<String> {
        self.inner
            .templates()
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    /// Indices of the parser's templates in the default set.
    fn template_ids(&self) -> Vec<usize> {
        self.inner.template_ids().to_vec()
    }

    /// Slots of each template's table.
    fn table_sizes(&self) -> Vec<usize> {
        (0..self.inner.weights().n_groups())
            .map(|t| self.inner.weights().group_size(t))
            .collect()
    }

    /// Number of completed online steps.
    fn steps(&self) -> u64 {
        self.inner.weights().steps()
    }

    /// Freezes the parser and its pruner for prediction: only the averaged
    /// table is kept (a third of the memory and of the saved bytes); it
    /// predicts as before and refuses to learn.
    fn freeze(&mut self, py: Python<'_>) -> PyResult<()> {
        let inner = &mut self.inner;
        py.detach(|| inner.freeze()).py()
    }

    /// Whether the parser is frozen.
    #[getter]
    fn frozen(&self) -> bool {
        self.inner.is_frozen()
    }

    fn __getstate__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let b = self.inner.to_bytes().py()?;
        Ok(PyBytes::new(py, &b))
    }

    fn __setstate__(&mut self, state: &[u8]) -> PyResult<()> {
        self.inner = ArcParser::from_bytes(state).py()?;
        Ok(())
    }

    fn __getnewargs__(&self) -> (&'static str,) {
        ("l2",)
    }
}

/// Names of all default templates, in order.
#[pyfunction]
fn default_template_names() -> Vec<String> {
    default_templates().into_iter().map(|t| t.name).collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, read_conllu_file, default_template_names)?;
    m.add_class::<ParseCorpus>()?;
    m.add_class::<ArcParserCore>()?;
    m.add_class::<ArcLabelerCore>()?;
    m.add("PARSER_FORMAT_VERSION", FORMAT_VERSION)?;
    m.add("PARSER_HASH_NAME", HASH_NAME)?;
    m.add("PARSER_HASH_SEED", HASH_SEED)?;
    Ok(())
}

/// The relation classifier of the label stage (see `omkl.DependencyParser`).
#[pyclass(module = "omkl._omkl")]
pub struct ArcLabelerCore {
    pub(crate) inner: ArcLabeler,
}

fn to_tokens(tokens: Vec<TokenTuple>, deprels: Option<Vec<String>>) -> Vec<Token> {
    let mut rels = deprels.map(|d| d.into_iter());
    tokens
        .into_iter()
        .map(|(form, lemma, upos, xpos, feats)| Token {
            form,
            lemma,
            upos,
            xpos,
            feats,
            head: None,
            deprel: rels
                .as_mut()
                .and_then(|r| r.next())
                .unwrap_or_else(|| "_".to_string()),
        })
        .collect()
}

#[pymethods]
impl ArcLabelerCore {
    #[new]
    #[pyo3(signature = (eta=0.02, lam=1e-6))]
    fn new(eta: f64, lam: f64) -> PyResult<Self> {
        Ok(ArcLabelerCore {
            inner: ArcLabeler::new(eta, lam).py()?,
        })
    }

    /// One round per word of a sentence with gold heads and relations.
    fn learn_one(
        &mut self,
        py: Python<'_>,
        sentence_id: &str,
        tokens: Vec<TokenTuple>,
        heads: Vec<usize>,
        deprels: Vec<String>,
    ) -> PyResult<f64> {
        let expected = format!("{} relations for sentence {sentence_id:?}", tokens.len());
        ensure_shape(
            deprels.len() == tokens.len(),
            "deprels",
            expected,
            deprels.len(),
        )?;
        let toks = to_tokens(tokens, Some(deprels));
        py.detach(|| self.inner.learn_sentence(&toks, &heads, sentence_id))
            .py()
    }

    /// Relations of the arcs `heads` of one sentence.
    fn predict_one(&self, tokens: Vec<TokenTuple>, heads: Vec<usize>) -> PyResult<Vec<String>> {
        let toks = to_tokens(tokens, None);
        self.inner.predict(&toks, &heads).py()
    }

    /// One epoch on the gold trees and relations of `corpus` in `order`.
    #[pyo3(signature = (corpus, order=None))]
    fn fit_epoch(
        &mut self,
        py: Python<'_>,
        corpus: &ParseCorpus,
        order: Option<Vec<usize>>,
    ) -> PyResult<f64> {
        let idx = order.unwrap_or_else(|| (0..corpus.sentences.len()).collect());
        let batch = gold_batch(corpus, Some(idx.clone()))?;
        let mut total = 0.0;
        for (c, chunk) in idx.chunks(512).enumerate() {
            total += py
                .detach(|| {
                    let mut t = 0.0;
                    for (j, &i) in chunk.iter().enumerate() {
                        let s = &corpus.sentences[i];
                        t += self
                            .inner
                            .learn_sentence(&s.tokens, &batch[c * 512 + j].1, &s.id)?;
                    }
                    Ok::<f64, OmklError>(t)
                })
                .py()?;
            py.check_signals()?;
        }
        Ok(total)
    }

    /// Relations of the arcs `heads` of every sentence of `corpus` (in
    /// parallel).
    fn predict_corpus(
        &self,
        py: Python<'_>,
        corpus: &ParseCorpus,
        heads: Vec<Vec<usize>>,
    ) -> PyResult<Vec<Vec<String>>> {
        use rayon::prelude::*;
        corpus.check_heads_len(heads.len())?;
        py.detach(|| {
            corpus
                .sentences
                .par_iter()
                .zip(heads.par_iter())
                .map(|(s, h)| self.inner.predict(&s.tokens, h))
                .collect::<omkl_core::Result<Vec<_>>>()
        })
        .py()
    }

    /// Relations seen in training, by class index.
    fn labels(&self) -> Vec<String> {
        self.inner.labels().to_vec()
    }

    /// Freezes the label stage for prediction: only its non-zero averaged
    /// weights are kept, in float32; it predicts as before and refuses to
    /// learn.
    fn freeze(&mut self, py: Python<'_>) -> PyResult<()> {
        let inner = &mut self.inner;
        py.detach(|| inner.freeze()).py()
    }

    /// Whether the label stage is frozen.
    #[getter]
    fn frozen(&self) -> bool {
        self.inner.is_frozen()
    }

    fn __getstate__<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.to_bytes())
    }

    fn __setstate__(&mut self, state: &[u8]) -> PyResult<()> {
        self.inner = ArcLabeler::from_bytes(state).py()?;
        Ok(())
    }
}
