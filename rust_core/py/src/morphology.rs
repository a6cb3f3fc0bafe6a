//! Python binding of [`omkl_core::model::morphology`]: `MorphologyChain`,
//! the stages and lexicons of a fitted `omkl.MorphologyTagger`, which tags
//! sentences of word forms in the core.

use std::collections::HashMap;

use omkl_core::model::morphology::{Lexicons, MorphologyChain as Core, Stage, Tagged};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::errors::IntoPyResult;
use crate::frozen_tagger::FrozenChainTagger;
use crate::text::{items, strs, TokenTemplates};

/// The stages (each `(TokenTemplates, FrozenChainTagger, labels)`) and the
/// lexicons (a dict of dicts of str) of a fitted morphology tagger, which
/// tags sentences of word forms without a Python object per word.
#[pyclass(module = "omkl._omkl", frozen)]
pub struct MorphologyChain {
    inner: Core,
}

type StageArgs<'py> = (
    PyRef<'py, TokenTemplates>,
    PyRef<'py, FrozenChainTagger>,
    Vec<String>,
);

fn stage(args: StageArgs<'_>) -> PyResult<Stage> {
    let (t, chain, labels) = args;
    Stage::new(t.inner.clone(), chain.chain(), labels).py()
}

#[pymethods]
impl MorphologyChain {
    /// `first_xpos` may be `None` (a model without a first XPOS stage, which
    /// then reads no casing classes). `lexicons` holds the dicts
    /// `amb_upos`, `amb_xpos`, `casing`, `feats`, `feats_backoff`,
    /// `feats_xpos`, `lemma` and `lemma_lower`; `feats_upos` the UPOS tags
    /// whose FEATS the FEATS stage predicts (the lexicons give the others').
    #[new]
    fn new(
        first_xpos: Option<StageArgs<'_>>,
        upos: StageArgs<'_>,
        xpos: StageArgs<'_>,
        lemma: StageArgs<'_>,
        feats: StageArgs<'_>,
        mut lexicons: HashMap<String, HashMap<String, String>>,
        feats_upos: Vec<String>,
    ) -> PyResult<Self> {
        let mut take = |name: &str| {
            lexicons.remove(name).ok_or_else(|| {
                PyValueError::new_err(format!("invalid value for `lexicons`: no {name:?} lexicon"))
            })
        };
        let lex = Lexicons {
            amb_upos: take("amb_upos")?,
            amb_xpos: take("amb_xpos")?,
            casing: take("casing")?,
            feats: take("feats")?,
            feats_backoff: take("feats_backoff")?,
            feats_xpos: take("feats_xpos")?,
            lemma: take("lemma")?,
            lemma_lower: take("lemma_lower")?,
            feats_upos,
        };
        if let Some(name) = lexicons.keys().next() {
            return Err(PyValueError::new_err(format!(
                "invalid value for `lexicons`: unknown lexicon {name:?}"
            )));
        }
        Ok(MorphologyChain {
            inner: Core::new(
                first_xpos.map(stage).transpose()?,
                stage(upos)?,
                stage(xpos)?,
                stage(lemma)?,
                stage(feats)?,
                lex,
            )
            .py()?,
        })
    }

    /// For each sentence of word forms (a list of non-empty str), the tuple
    /// `(upos, xpos, feats, lemma, upos_alt, xpos_alt)` of lists, one entry
    /// per word; `upos_alt` (`xpos_alt`) is `None` unless asked for, else
    /// the `(tag, marginal)` of the second-best tag of each word. Tagged
    /// without the GIL, the sentences in parallel.
    #[pyo3(signature = (sentences, upos_alt=false, xpos_alt=false))]
    fn tag_many<'py>(
        &self,
        py: Python<'py>,
        sentences: &Bound<'py, PyAny>,
        upos_alt: bool,
        xpos_alt: bool,
    ) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let sents = items(sentences, "sentences", "a list of sentences (lists of str)")?;
        let mut held = Vec::with_capacity(sents.len());
        for (s, words) in sents.iter().enumerate() {
            let mut out = Vec::new();
            let what = format!("sentences[{s}]");
            if strs(words, &what, &mut out)? == 0 {
                return Err(PyValueError::new_err(format!(
                    "invalid value for `{what}`: empty sentence; expected at least one word"
                )));
            }
            held.push(out);
        }
        let mut text = Vec::with_capacity(held.len());
        for (s, words) in held.iter().enumerate() {
            let mut ws = Vec::with_capacity(words.len());
            for (i, w) in words.iter().enumerate() {
                let w = w.to_str().map_err(|e| {
                    PyValueError::new_err(format!("invalid value for `sentences[{s}][{i}]`: {e}"))
                })?;
                if w.is_empty() {
                    return Err(PyValueError::new_err(format!(
                        "invalid value for `sentences[{s}][{i}]`: expected a non-empty str"
                    )));
                }
                ws.push(w);
            }
            text.push(ws);
        }
        let model = &self.inner;
        let tagged = py
            .detach(|| model.tag_many(&text, upos_alt, xpos_alt))
            .py()?;
        tagged.into_iter().map(|t| columns(py, t)).collect()
    }
}

/// The tuple of lists of one tagged sentence.
fn columns(py: Python<'_>, t: Tagged) -> PyResult<Bound<'_, PyTuple>> {
    let alt = |v: Option<Vec<(String, f64)>>| -> PyResult<Bound<'_, PyAny>> {
        match v {
            None => Ok(py.None().into_bound(py)),
            Some(v) => Ok(PyList::new(py, v)?.into_any()),
        }
    };
    let list = |v: Vec<String>| -> PyResult<Bound<'_, PyAny>> {
        Ok(PyList::new(py, v.iter().map(|s| PyString::new(py, s)))?.into_any())
    };
    PyTuple::new(
        py,
        [
            list(t.upos)?,
            list(t.xpos)?,
            list(t.feats)?,
            list(t.lemma)?,
            alt(t.upos_alt)?,
            alt(t.xpos_alt)?,
        ],
    )
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<MorphologyChain>()
}
