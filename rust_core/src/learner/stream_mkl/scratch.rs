//! The buffers one round of Alg. 3 reuses from round to round.

use crate::learner::structure::ChainWorkspace;

/// Buffers reused from round to round (never saved or compared).
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    pub(super) gs: Vec<f64>,
    pub(super) em: Vec<f64>,
    pub(super) tr: Vec<f64>,
    /// Chain decoding: the labelling `out` and the Viterbi and
    /// forward-backward workspaces.
    pub(super) ws: ChainWorkspace,
    /// The labelling predicted before the step, and its wrong positions.
    pub(super) pred: Vec<usize>,
    pub(super) mistakes: usize,
    pub(super) node: Vec<f64>,
    pub(super) pair: Vec<f64>,
    pub(super) c: Vec<f64>,
    pub(super) dtr: Vec<f64>,
    /// Indices of the non-zero entries of `dtr`, in increasing order.
    pub(super) dtr_nz: Vec<usize>,
    /// One bit per entry of `dtr` (all zero between rounds), to list
    /// `dtr_nz` in order without sorting.
    pub(super) dtr_marks: Vec<u64>,
    /// The non-zero `(label, change)` entries of one position's row of `c`
    /// (room for `L` of them).
    pub(super) nz: Vec<(usize, f64)>,
    /// The label count `c`'s rows were laid out for.
    pub(super) c_labels: usize,
    pub(super) touched: Vec<usize>,
    /// Hinge rounds: per entry of `touched`, its gold and predicted labels
    /// (smaller first), the two non-zeros of its row of `c`.
    pub(super) pairs: Vec<(usize, usize)>,
    pub(super) sq: Vec<f64>,
    pub(super) ip: Vec<f64>,
    pub(super) dd: Vec<f64>,
    pub(super) norms: Vec<f64>,
    pub(super) shrunk: Vec<f64>,
    pub(super) active: Vec<(usize, usize)>,
    pub(super) acc: Vec<f64>,
    /// The non-zero features (index in the group, value) of one position
    /// in one explicit group.
    pub(super) fidx: Vec<u32>,
    pub(super) fval: Vec<f64>,
}

/// A model's [`Scratch`], boxed: a round takes it out of the model and puts
/// it back (a pointer moves, not the buffers). Never saved or compared.
#[derive(Debug, Clone, Default)]
pub struct ScratchSlot(Option<Box<Scratch>>);

impl ScratchSlot {
    /// The buffers (new ones the first time).
    pub(super) fn take(&mut self) -> Box<Scratch> {
        self.0.take().unwrap_or_default()
    }

    /// Puts the buffers back.
    pub(super) fn put(&mut self, s: Box<Scratch>) {
        self.0 = Some(s);
    }

    /// Wrong positions of the last round's prediction (0 before any).
    pub(super) fn mistakes(&self) -> usize {
        self.0.as_ref().map_or(0, |s| s.mistakes)
    }
}

/// The group scores of a model's last prediction ([`super::memo`]): the
/// current iterate's group scores (`n × G × L`) of the rows `x` at round
/// `t` of a model with `d` columns and `L` labels. Never saved, and
/// ignored when models are compared.
#[derive(Debug, Clone, Default)]
pub struct ScoreMemo {
    pub(super) key: Option<(u64, usize, usize)>,
    pub(super) x: Vec<f32>,
    pub(super) gs: Vec<f64>,
}

crate::macros::ignored_when_compared!(Scratch, ScratchSlot, ScoreMemo);

impl ScoreMemo {
    /// Forgets the scores.
    pub fn clear(&mut self) {
        self.key = None;
    }
}
