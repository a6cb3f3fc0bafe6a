//! Python binding of token templates ([`omkl_core::features::token_templates`]):
//! the `TokenTemplates` class, and the reading of sentences of word forms
//! with their string columns for the chain taggers' `*_text` methods, which
//! compute the features in the core without building a dict per word.
//!
//! The strings are borrowed from the Python `str` objects (their cached
//! UTF-8), which the call keeps alive, so that the features are computed
//! and the sentences decoded with the GIL released.

use omkl_core::features::token_templates::{Sentences, TokenTemplates as Core};
use omkl_core::features::{FeatureSpace, SparseBatch};
use omkl_core::learner::chain_text::{template_groups, to_group_ids};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};

use crate::convert::shown;
use crate::errors::IntoPyResult;

/// A set of token templates: a list of blocks (`"token"`, `"classes:NAME"`,
/// `"tags:NAME"`, `"casing"`, `"lemma"`, `"feats"`) whose features a chain
/// tagger computes from word forms and string columns.
#[pyclass(module = "omkl._omkl", frozen)]
pub struct TokenTemplates {
    pub(crate) inner: Core,
}

#[pymethods]
impl TokenTemplates {
    #[new]
    fn new(blocks: Vec<String>) -> PyResult<Self> {
        Ok(TokenTemplates {
            inner: Core::parse(&blocks).py()?,
        })
    }

    /// The blocks, as given.
    #[getter]
    fn blocks(&self) -> Vec<String> {
        self.inner
            .blocks()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// The template names, in the order of each word's entries.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.inner.names().to_vec()
    }

    /// What each column holds, in the order the methods expect them.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.inner.columns().to_vec()
    }

    /// The `(template, bucket, value)` entries of each word of the sentence
    /// `words`, with its `columns` (one list of str per column, one str per
    /// word), in tables of `n_buckets` buckets.
    fn entries(
        &self,
        words: &Bound<'_, PyAny>,
        columns: &Bound<'_, PyAny>,
        n_buckets: usize,
    ) -> PyResult<Vec<Vec<(String, u32, f64)>>> {
        let one = PyTuple::new(words.py(), [words])?;
        let cols = columns
            .try_iter()?
            .map(|c| Ok(PyTuple::new(words.py(), [c?])?.into_any()))
            .collect::<PyResult<Vec<_>>>()?;
        let held = read(
            &self.inner,
            one.as_any(),
            &PyTuple::new(words.py(), cols)?.into_any(),
        )?;
        let text = held.view()?;
        let rows = self.inner.batch(&text, n_buckets).py()?;
        let names = self.inner.names();
        let r = &rows[0];
        Ok((0..r.n_examples())
            .map(|i| {
                (r.indptr[i]..r.indptr[i + 1])
                    .map(|j| {
                        (
                            names[r.groups[j] as usize].clone(),
                            r.indices[j],
                            r.values[j],
                        )
                    })
                    .collect()
            })
            .collect())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let blocks = pyo3::types::PyList::new(py, self.blocks())?;
        Ok(format!("TokenTemplates({})", blocks.repr()?))
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<TokenTemplates>()
            .is_ok_and(|o| o.get().inner == self.inner)
    }

    fn __hash__(&self) -> u64 {
        omkl_core::features::hash_name(&self.blocks().join("\0"))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Vec<String>,))> {
        Ok((slf.get_type().into_any(), (slf.get().blocks(),)))
    }
}

/// The `str` objects of a call: the words of every sentence, then each
/// column's values, all flattened.
pub(crate) struct Held<'py> {
    strs: Vec<Bound<'py, PyString>>,
    starts: Vec<usize>,
    n_columns: usize,
}

impl Held<'_> {
    /// The strings as [`Sentences`] (borrowed from the `str` objects).
    pub(crate) fn view(&self) -> PyResult<Sentences<'_>> {
        let n = *self.starts.last().unwrap_or(&0);
        let mut all = Vec::with_capacity(self.strs.len());
        for (j, s) in self.strs.iter().enumerate() {
            all.push(s.to_str().map_err(|e| {
                let (k, at) = (j / n.max(1), j % n.max(1));
                let s = self.starts.partition_point(|&x| x <= at) - 1;
                let what = if k == 0 {
                    format!("sentences[{s}][{}]", at - self.starts[s])
                } else {
                    format!("columns[{}][{s}][{}]", k - 1, at - self.starts[s])
                };
                PyValueError::new_err(format!("invalid value for `{what}`: {e}"))
            })?);
        }
        let columns = (0..self.n_columns)
            .map(|k| all[(k + 1) * n..(k + 2) * n].to_vec())
            .collect();
        all.truncate(n);
        Sentences::new(self.starts.clone(), all, columns).py()
    }
}

/// `ValueError` "invalid value for `{what}`: {reason}".
fn bad(what: &str, reason: String) -> PyErr {
    PyValueError::new_err(format!("invalid value for `{what}`: {reason}"))
}

/// The items of a list (not a `str`), or a `ValueError` naming `what`.
pub(crate) fn items<'py>(
    v: &Bound<'py, PyAny>,
    what: &str,
    expected: &str,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if v.is_instance_of::<PyString>() || v.is_instance_of::<PyBytes>() {
        return Err(bad(what, format!("expected {expected}, got {}", shown(v))));
    }
    match v.try_iter() {
        Ok(it) => it.collect(),
        Err(_) => Err(bad(what, format!("expected {expected}, got {}", shown(v)))),
    }
}

/// The `str` items of `v`, appended to `out`, or a `ValueError` naming
/// `what` and the item.
pub(crate) fn strs<'py>(
    v: &Bound<'py, PyAny>,
    what: &str,
    out: &mut Vec<Bound<'py, PyString>>,
) -> PyResult<usize> {
    let list = items(v, what, "a list of str")?;
    for (i, x) in list.iter().enumerate() {
        let s = x.cast::<PyString>().map_err(|_| {
            bad(
                &format!("{what}[{i}]"),
                format!("expected a str, got {}", shown(x)),
            )
        })?;
        out.push(s.clone());
    }
    Ok(list.len())
}

/// Reads `sentences` (lists of str) and `columns` (one list per column of
/// `t`, holding one list of str per sentence, one str per word);
/// `ValueError` naming the sentence, column and what was expected.
pub(crate) fn read<'py>(
    t: &Core,
    sentences: &Bound<'py, PyAny>,
    columns: &Bound<'py, PyAny>,
) -> PyResult<Held<'py>> {
    let sents = items(sentences, "sentences", "a list of sentences (lists of str)")?;
    let cols = items(columns, "columns", "a list of columns")?;
    let names = t.columns();
    if cols.len() != names.len() {
        return Err(bad(
            "columns",
            format!(
                "expected {} columns ([{}]), got {}",
                names.len(),
                names.join(", "),
                cols.len()
            ),
        ));
    }
    let mut strs_all = Vec::new();
    let mut starts = vec![0];
    for (s, words) in sents.iter().enumerate() {
        let n = strs(words, &format!("sentences[{s}]"), &mut strs_all)?;
        if n == 0 {
            return Err(bad(
                &format!("sentences[{s}]"),
                "empty sentence; expected at least one word".into(),
            ));
        }
        starts.push(strs_all.len());
    }
    for (k, col) in cols.iter().enumerate() {
        let what = format!("columns[{k}]");
        let per = items(
            col,
            &what,
            &format!("a list of {} (one list per sentence)", names[k]),
        )?;
        if per.len() != sents.len() {
            return Err(bad(
                &what,
                format!(
                    "expected {} lists of {} (one per sentence), got {}",
                    sents.len(),
                    names[k],
                    per.len()
                ),
            ));
        }
        for (s, v) in per.iter().enumerate() {
            let what = format!("columns[{k}][{s}]");
            let n = strs(v, &what, &mut strs_all)?;
            let want = starts[s + 1] - starts[s];
            if n != want {
                return Err(bad(
                    &what,
                    format!(
                        "expected {want} {} (one per word of sentences[{s}]), got {n}",
                        names[k]
                    ),
                ));
            }
        }
    }
    Ok(Held {
        strs: strs_all,
        starts,
        n_columns: names.len(),
    })
}

/// The rows of `text` with the group ids of `space`, the entries of
/// templates it does not know dropped (computed without the GIL).
///
/// # Complexity
/// O(Σ word lengths × templates).
pub(crate) fn rows_in(
    py: Python<'_>,
    t: &Core,
    space: &FeatureSpace,
    text: &Sentences<'_>,
) -> PyResult<Vec<SparseBatch>> {
    let ids = template_groups(space, t).py()?;
    py.detach(|| {
        let mut rows = t.batch(text, space.n_buckets())?;
        for r in &mut rows {
            to_group_ids(r, &ids);
        }
        Ok(rows)
    })
    .py()
}

/// Marginals (`n × L`, row-major) as 2-D arrays.
/// `decode` applied to each sentence of word forms `sentences` with the
/// string `columns` of `templates`, its features computed in the core as
/// group ids of `space` (templates it does not know add nothing), without
/// the GIL.
pub(crate) fn decode_text<T: Send>(
    py: Python<'_>,
    templates: &TokenTemplates,
    space: &FeatureSpace,
    sentences: &Bound<'_, PyAny>,
    columns: &Bound<'_, PyAny>,
    decode: impl Fn(&SparseBatch) -> omkl_core::Result<T> + Send + Sync,
) -> PyResult<Vec<T>> {
    let held = read(&templates.inner, sentences, columns)?;
    let rows = rows_in(py, &templates.inner, space, &held.view()?)?;
    py.detach(|| {
        rows.iter()
            .map(decode)
            .collect::<omkl_core::Result<Vec<_>>>()
    })
    .py()
}

pub(crate) fn marginal_arrays(
    py: Python<'_>,
    mus: Vec<Vec<f64>>,
    n_labels: usize,
) -> PyResult<Vec<Bound<'_, numpy::PyArray2<f64>>>> {
    let l = n_labels.max(1);
    mus.into_iter()
        .map(|mu| crate::convert::array2(py, mu.len() / l, l, mu))
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TokenTemplates>()
}
