//! Tests of the layout: every evaluator (the walk, an oblivious tree's table, a masked tree's
//! comparisons) reaches the leaf that a plain walk over the attributes as written reaches, by ONNX
//! Runtime's rules.

use super::*;

/// One node of a test tree: (node id, mode, feature, threshold, true id, false id, missing to
/// true); leaves' weight is their node id.
type Spec = (i64, Mode, i64, f32, i64, i64, bool);

fn attributes(trees: &[&[Spec]]) -> TreeAttributes {
    let mut a = TreeAttributes::default();
    for (tree, nodes) in trees.iter().enumerate() {
        for &(id, mode, feature, threshold, yes, no, missing) in nodes.iter() {
            a.tree_ids.push(tree as i64);
            a.node_ids.push(id);
            a.modes.push(mode);
            a.features.push(feature);
            a.thresholds.push(threshold);
            a.true_ids.push(yes);
            a.false_ids.push(no);
            a.missing_true.push(i64::from(missing));
            if mode == Mode::Leaf {
                a.weight_trees.push(tree as i64);
                a.weight_nodes.push(id);
                a.weight_targets.push(0);
                a.weight_values.push(id as f32);
            }
        }
    }
    a
}

/// ONNX Runtime's walk over the attributes as written: the leaf (its id) a row reaches.
fn reference(nodes: &[Spec], row: &[f32]) -> f32 {
    let mut at = nodes[0];
    loop {
        let (id, mode, feature, t, yes, no, missing) = at;
        let v = row[feature as usize];
        let go = match mode {
            Mode::Leaf => return id as f32,
            Mode::Leq => v <= t,
            Mode::Lt => v < t,
            Mode::Gte => v >= t,
            Mode::Gt => v > t,
            Mode::Eq => v == t,
            Mode::Neq | Mode::Member => v != t,
        } || (missing && v.is_nan());
        let next = if go { yes } else { no };
        at = *nodes.iter().find(|n| n.0 == next).expect("child");
    }
}

fn check(trees: &[&[Spec]], rows: &[[f32; 2]]) -> Layout {
    let layout = Layout::build(&attributes(trees), &|why| Uncovered { operator: "test".into(), node: String::new(), why }).expect("layout");
    let x: Vec<f32> = rows.iter().flatten().copied().collect();
    // The rows as they come, and copied into 16 columns with their set keys.
    let copied: Vec<Keyed<16>> = rows
        .iter()
        .map(|r| {
            let values: [f32; 16] = std::array::from_fn(|k| if k < 2 { r[k] } else { 0.0 });
            Keyed { values, keys: values.map(set_keys) }
        })
        .collect();
    for (tree, nodes) in trees.iter().enumerate() {
        let (mut leaves, mut from_copy) = (vec![0u32; rows.len()], vec![0u32; rows.len()]);
        layout.leaves(tree, &Wide { x: &x, width: 2 }, None, &mut leaves);
        layout.leaves(tree, copied.as_slice(), None, &mut from_copy);
        assert_eq!(leaves, from_copy, "tree {tree}");
        // A [`Masked`] tree read from columns, a block at a time (the last one short).
        let mut masked = vec![0u32; rows.len()];
        for (b, (block, out)) in rows.chunks(MASKED_BLOCK).zip(masked.chunks_mut(MASKED_BLOCK)).enumerate() {
            let values: Vec<f32> = (0..2).flat_map(|f| block.iter().map(move |row| row[f])).collect();
            let keys: Vec<u32> = values.iter().map(|&v| set_keys(v)).collect();
            let mut bins = BinBlock::default();
            layout.bins.fill(&values, block.len(), &mut bins);
            layout.bins.index_sets(&keys, block.len(), &mut bins);
            let columns = Columns { values: &values, keys: &keys, rows: block.len(), bins: Some(&bins) };
            layout.leaves(tree, &copied[b * MASKED_BLOCK..][..block.len()], Some(&columns), out);
        }
        assert_eq!(leaves, masked, "tree {tree}, read from columns");
        for (row, &leaf) in rows.iter().zip(&leaves) {
            assert_eq!(layout.leaf_value[leaf as usize].to_bits(), reference(nodes, row).to_bits(), "tree {tree}, row {row:?}");
        }
    }
    layout
}

/// Values around every threshold used below, NaN, signed zero, infinities, and values just
/// outside and inside the range a set holds.
fn rows() -> Vec<[f32; 2]> {
    let values = [
        -f32::INFINITY,
        -1.0,
        -0.0,
        0.0,
        0.25,
        0.5,
        1.0,
        1.5,
        2.0,
        5.0,
        7.0,
        63.0,
        64.0,
        255.0,
        255.5,
        256.0,
        1e9,
        f32::INFINITY,
        f32::NAN,
    ];
    // 19 × 19 rows: more than one group of 8 and a remainder walked row by row.
    values.iter().flat_map(|&a| values.iter().map(move |&b| [a, b])).collect()
}

#[test]
fn an_equality_chain_becomes_one_set_node_with_the_chains_leaves() {
    use Mode::*;
    // f0 in {1, 5, 7, 64} -> node 4, else leaf 3; node 4: f1 <= 0.5 (NaN true).
    let chain: &[Spec] = &[
        (0, Eq, 0, 1.0, 4, 1, false),
        (1, Eq, 0, 5.0, 4, 2, false),
        (2, Eq, 0, 7.0, 4, 5, false),
        (5, Eq, 0, 64.0, 4, 3, false),
        (3, Leaf, 0, 0.0, 0, 0, false),
        (4, Leq, 1, 0.5, 6, 7, true),
        (6, Leaf, 0, 0.0, 0, 0, false),
        (7, Leaf, 0, 0.0, 0, 0, false),
    ];
    // A chain whose missing values go to the true child, and one on 255.5 (not a set).
    let missing: &[Spec] =
        &[(0, Eq, 1, 0.0, 2, 1, true), (1, Eq, 1, 255.0, 2, 3, true), (2, Leaf, 0, 0.0, 0, 0, false), (3, Leaf, 0, 0.0, 0, 0, false)];
    let fraction: &[Spec] =
        &[(0, Eq, 0, 255.5, 2, 1, false), (1, Eq, 0, 2.0, 2, 3, false), (2, Leaf, 0, 0.0, 0, 0, false), (3, Leaf, 0, 0.0, 0, 0, false)];
    let layout = check(&[chain, missing, fraction], &rows());
    // Three sets beside the empty one (the lone BRANCH_EQ on 2 is a set of one value); the
    // first tree is two levels deep, not five.
    assert_eq!(layout.sets.iter().filter(|s| s.iter().any(|&w| w != 0)).count(), 3);
    assert_eq!(layout.trees[0].depth, 2);
    assert_eq!(layout.trees[2].depth, 2);
    assert!(!layout.leq_and_sets);
    // BRANCH_LEQ and sets only: the walk made for them, with and without missing values.
    let layout = check(&[chain, missing], &rows());
    assert!(layout.leq_and_sets && layout.has_missing);
    // Read from columns: the chain's set by one table look-up, a set whose missing values go
    // to the true child by its own test (a one-level tree is read as oblivious).
    let masked_sets = |layout: &Layout| -> Vec<Option<(usize, usize)>> {
        layout.masked.iter().map(|m| m.as_ref().map(|m| (m.set_tables.len(), m.set_nodes.len()))).collect()
    };
    assert_eq!(masked_sets(&layout), [Some((1, 0)), None]);
    // The chain's tree is binned, its one set table looked up with its leaves (`leaves_with`).
    let tables = layout.masked[0].as_ref().and_then(|m| m.binned.as_ref()).map(|b| b.tables.len());
    assert_eq!(tables, Some(1), "the chain's tree binned with one set table");
    let deeper: &[Spec] = &[
        (0, Eq, 1, 0.0, 2, 1, true),
        (1, Eq, 1, 255.0, 2, 4, true),
        (2, Leaf, 0, 0.0, 0, 0, false),
        (4, Leq, 0, 0.5, 5, 6, false),
        (5, Leaf, 0, 0.0, 0, 0, false),
        (6, Leaf, 0, 0.0, 0, 0, false),
    ];
    assert_eq!(masked_sets(&check(&[chain, deeper], &rows())), [Some((1, 0)), Some((0, 1))]);
    let no_missing: Vec<Spec> = chain.iter().map(|&(id, mode, f, t, yes, no, _)| (id, mode, f, t, yes, no, false)).collect();
    let layout = check(&[&no_missing], &rows());
    assert!(layout.leq_and_sets && !layout.has_missing);
    // Missing values only at BRANCH_LEQ nodes: the walk of signed comparisons and sets.
    let layout = check(&[chain], &rows());
    assert!(layout.leq_and_sets && layout.signed);
}

#[test]
fn an_oblivious_tree_reads_its_leaf_from_a_table() {
    use Mode::*;
    let tree = |second: f32, missing: bool| -> Vec<Spec> {
        vec![
            (0, Gt, 0, 0.5, 1, 2, missing),
            (1, Gt, 1, 1.5, 3, 4, missing),
            (2, Gt, 1, second, 5, 6, missing),
            (3, Leaf, 0, 0.0, 0, 0, false),
            (4, Leaf, 0, 0.0, 0, 0, false),
            (5, Leaf, 0, 0.0, 0, 0, false),
            (6, Leaf, 0, 0.0, 0, 0, false),
        ]
    };
    let (oblivious, other, missing) = (tree(1.5, false), tree(2.0, false), tree(1.5, true));
    let layout = check(&[&oblivious, &other], &rows());
    assert_eq!(layout.oblivious.iter().map(Option::is_some).collect::<Vec<_>>(), [true, false]);
    // With missing values to the true child, and mixed with an equality node: the walk that reads
    // each node's outcome bits.
    let equal: &[Spec] = &[(0, Eq, 0, 1.0, 1, 2, false), (1, Leaf, 0, 0.0, 0, 0, false), (2, Leaf, 0, 0.0, 0, 0, false)];
    let layout = check(&[&missing, equal], &rows());
    assert!(layout.oblivious[0].is_some() && layout.same_mode.is_none());
}

#[test]
fn every_mode_goes_where_onnx_runtime_goes_alone_and_mixed() {
    use Mode::*;
    let modes = [Leq, Lt, Gte, Gt, Eq, Neq];
    let trees: Vec<Vec<Spec>> = modes
        .iter()
        .flat_map(|&mode| {
            [(0.5f32, false), (0.5, true), (f32::NAN, false), (f32::NAN, true)]
                .map(|(t, missing)| vec![(0, mode, 1, t, 1, 2, missing), (1, Leaf, 0, 0.0, 0, 0, false), (2, Leaf, 0, 0.0, 0, 0, false)])
        })
        .collect();
    let all: Vec<&[Spec]> = trees.iter().map(|t| t.as_slice()).collect();
    // Mixed modes: the walk that reads each node's outcome bits.
    assert_eq!(check(&all, &rows()).same_mode, None);
    // One mode per ensemble: the walks compiled for that mode.
    for one in all.chunks(4) {
        assert!(check(one, &rows()).same_mode.is_some());
    }
    // BRANCH_LEQ with missing values to the true child at some nodes: tested as `x < c`, the
    // sign of x flipped there; thresholds at ±0, ±inf, the largest finite value; not when a
    // threshold is NaN, or +inf where missing values go to the false child.
    let leq = |t: f32, missing: bool| -> Vec<Spec> {
        vec![
            (0, Leq, 1, t, 1, 2, missing),
            (1, Leq, 0, 1.0, 3, 4, !missing),
            (2, Leaf, 0, 0.0, 0, 0, false),
            (3, Leaf, 0, 0.0, 0, 0, false),
            (4, Leaf, 0, 0.0, 0, 0, false),
        ]
    };
    let thresholds = [0.5, 0.0, -0.0, 255.0, f32::MAX, -f32::INFINITY];
    let signed: Vec<Vec<Spec>> = thresholds.iter().flat_map(|&t| [leq(t, true), leq(t, false)]).chain([leq(f32::INFINITY, true)]).collect();
    let signed: Vec<&[Spec]> = signed.iter().map(|t| t.as_slice()).collect();
    assert!(check(&signed, &rows()).signed);
    for unsigned in [leq(f32::INFINITY, false), leq(f32::NAN, true)] {
        let layout = check(&[&unsigned], &rows());
        assert!(layout.has_missing && !layout.signed);
    }
}

/// A lopsided tree of plain comparisons on two features: `leaves` leaves, a branch on the
/// left spine at each level (thresholds spread over the test values), missing values to the
/// true child at every other branch.
fn spine(mode: Mode, leaves: usize) -> Vec<Spec> {
    let branches = leaves - 1;
    let mut nodes = Vec::new();
    for k in 0..branches {
        let id = k as i64;
        let leaf = (branches + k) as i64;
        let next = if k + 1 < branches { id + 1 } else { (2 * branches) as i64 };
        let threshold = [0.5, -0.0, 1.5, 255.0, 63.0, f32::INFINITY, -1.0][k % 7];
        // Alternately the spine goes on through the true and the false child.
        let (yes, no) = if k % 2 == 0 { (next, leaf) } else { (leaf, next) };
        nodes.push((id, mode, (k % 2) as i64, threshold, yes, no, k % 2 == 1));
        nodes.push((leaf, Mode::Leaf, 0, 0.0, 0, 0, false));
    }
    nodes.push(((2 * branches) as i64, Mode::Leaf, 0, 0.0, 0, 0, false));
    // The root first, as the attributes list it.
    nodes.sort_by_key(|n| (n.1 == Mode::Leaf, n.0));
    nodes
}

/// A complete tree of `depth` levels in heap order (node `h`'s children `2h + 1`, `2h + 2`),
/// alternating between the two features.
fn complete(mode: Mode, depth: u32) -> Vec<Spec> {
    let branches = (1i64 << depth) - 1;
    (0..2 * branches + 1)
        .map(|h| match h < branches {
            true => (h, mode, h % 2, [0.5, -0.0, 1.5, 255.0, 63.0, -1.0][h as usize % 6], 2 * h + 1, 2 * h + 2, h % 3 == 0),
            false => (h, Mode::Leaf, 0, 0.0, 0, 0, false),
        })
        .collect()
}

#[test]
fn a_tree_of_at_most_32_leaves_is_read_from_columns_with_the_walks_leaves() {
    use Mode::*;
    for mode in [Leq, Lt, Gte, Gt] {
        // 32 leaves, 31 levels deep: read from columns; 33: walked.
        let (fits, deep) = (spine(mode, MASKED_LEAVES), spine(mode, MASKED_LEAVES + 1));
        let balanced: &[Spec] = &[
            (0, mode, 0, 0.5, 1, 2, true),
            (1, mode, 1, 1.5, 3, 4, false),
            (2, mode, 1, -0.0, 5, 6, true),
            (3, Leaf, 0, 0.0, 0, 0, false),
            (4, Leaf, 0, 0.0, 0, 0, false),
            (5, Leaf, 0, 0.0, 0, 0, false),
            (6, Leaf, 0, 0.0, 0, 0, false),
        ];
        let layout = check(&[&fits, &deep, balanced], &rows());
        // BRANCH_GT/GTE with missing values keep the walk that reads each node's outcome bits.
        let expected = if matches!(mode, Leq | Lt) { [true, false, true] } else { [false; 3] };
        assert_eq!(layout.masked.iter().map(Option::is_some).collect::<Vec<_>>(), expected, "{mode:?}");
        let no_missing: Vec<Spec> = fits.iter().map(|&(id, m, f, t, yes, no, _)| (id, m, f, t, yes, no, false)).collect();
        assert!(check(&[&no_missing], &rows()).masked[0].is_some(), "{mode:?}");
        assert_eq!(layout.trees[0].depth, MASKED_LEAVES as u32 - 1);
    }
    // Complete trees: 32 leaves read from columns, 64 (a forest's) walked.
    let layout = check(&[&complete(Lt, 5), &complete(Lt, 6)], &rows());
    assert_eq!(layout.masked.iter().map(Option::is_some).collect::<Vec<_>>(), [true, false]);
    // BRANCH_LEQ with sets too (the one-level tree is read as oblivious); mixed modes keep
    // their walk.
    let set: &[Spec] = &[(0, Eq, 0, 1.0, 1, 2, false), (1, Leaf, 0, 0.0, 0, 0, false), (2, Leaf, 0, 0.0, 0, 0, false)];
    let layout = check(&[set, &spine(Leq, 4)], &rows());
    assert!(layout.leq_and_sets);
    assert_eq!(layout.masked.iter().map(Option::is_some).collect::<Vec<_>>(), [false, true]);
    let layout = check(&[&spine(Lt, 4), &spine(Leq, 4)], &rows());
    assert!(layout.same_mode.is_none() && layout.masked.iter().all(Option::is_none));
}

/// Whether `v` goes to the true child of a [`Masked`] tree's plain node, compared on f32 as the
/// layout's walk compares it (the dispatch of [`Layout::leaves`], then [`Layout::masked_leaves`]'s
/// mode for plain nodes).
fn float_goes(layout: &Layout, comparison: &Comparison, v: f32) -> bool {
    let node = Node { threshold: comparison.threshold, feature: comparison.feature, children: [0, 0] };
    let sets = layout.sets.as_slice();
    macro_rules! goes {
        ($mode:expr, $missing:expr) => {
            Layout::goes::<{ $mode }, { $missing }>(sets, &node, 0, v, || 0)
        };
    }
    match (layout.same_mode, layout.has_missing) {
        (Some(Mode::Leq), false) => goes!(Mode::Leq as u8, false),
        (Some(Mode::Lt), false) => goes!(Mode::Lt as u8, false),
        (Some(Mode::Gt), false) => goes!(Mode::Gt as u8, false),
        (Some(Mode::Gte), false) => goes!(Mode::Gte as u8, false),
        (Some(Mode::Leq), true) if layout.signed => goes!(SIGNED, true),
        (Some(Mode::Leq), true) => goes!(Mode::Leq as u8, true),
        (Some(Mode::Lt), true) => goes!(Mode::Lt as u8, true),
        _ if layout.leq_and_sets && layout.signed => goes!(SIGNED, true),
        _ if layout.leq_and_sets => match layout.has_missing {
            true => goes!(Mode::Leq as u8, true),
            false => goes!(Mode::Leq as u8, false),
        },
        _ => panic!("no masked tree in a layout of mixed modes"),
    }
}

/// The least f32 above `t`, and the greatest below (not NaN or ±inf).
fn neighbours(t: f32) -> [f32; 2] {
    let up = |t: f32| match t {
        0.0 => f32::from_bits(1),
        t if t > 0.0 => f32::from_bits(t.to_bits() + 1),
        t => f32::from_bits(t.to_bits() - 1),
    };
    [up(t), -up(-t)]
}

/// Every binned comparison of `layout` against the float comparison it stands for, at every
/// threshold of the layout's binned features (at it, just below and just above it), at the node's
/// own stored threshold and its negation, and at NaN, ±inf, ±0, ±f32::MAX and the smallest
/// subnormals; and [`Bins::fill`] (the block's binning) against [`bin_of`] on those values. Returns
/// the comparisons checked.
fn check_bins(name: &str, layout: &Layout) -> usize {
    let mut checked = 0;
    let specials =
        [f32::NAN, -f32::NAN, f32::INFINITY, -f32::INFINITY, 0.0, -0.0, f32::MAX, -f32::MAX, f32::from_bits(1), -f32::from_bits(1)];
    for (tree, masked) in layout.masked.iter().enumerate() {
        let Some(masked) = masked else { continue };
        let Some(binned) = &masked.binned else { continue };
        assert_eq!(binned.nodes.len(), masked.nodes.len(), "{name}: tree {tree}");
        let width_bits = 8 * u32::from(binned.width);
        assert!(masked.count as u32 <= width_bits, "{name}: tree {tree}: {} leaves in {width_bits}-bit masks", masked.count);
        for (node, b) in masked.nodes.iter().zip(&binned.nodes) {
            assert_eq!(node.keep, b.keep, "{name}: tree {tree}");
            let column = &layout.bins.columns[b.column as usize];
            let (feature, edges) = &layout.bins.edges[column.feature as usize];
            assert_eq!(*feature, node.comparison.feature & !FEATURE_MISSING, "{name}: tree {tree}");
            assert!(edges.len() <= MAX_EDGES && edges.windows(2).all(|w| w[0] < w[1]), "{name}: edges {edges:?}");
            let own = [node.comparison.threshold, -node.comparison.threshold];
            let values: Vec<f32> = edges
                .iter()
                .chain(&own)
                .flat_map(|&t| {
                    let [up, down] = neighbours(t);
                    [t, up, down]
                })
                .chain(specials)
                .collect();
            for &v in &values {
                let bin = bin_of(edges, column.encoding, v);
                assert!(bin <= 2 * edges.len() as u32 + 1, "{name}: bin {bin} of {v}");
                let fails = bin > b.cut;
                assert_eq!(
                    fails,
                    !float_goes(layout, &node.comparison, v),
                    "{name}: tree {tree}: node {:?} at {v} ({:?}, bin {bin}, cut {})",
                    node.comparison,
                    column.encoding,
                    b.cut
                );
                checked += 1;
            }
            // The block's binning of these values, as the executor bins a block: the layout's own
            // bins over a block whose every feature column holds them (a block at a time), the
            // node's column read in each width some tree reads, against `bin_of`.
            let features = layout.max_feature + 1;
            for chunk in values.chunks(MASKED_BLOCK) {
                let rows = chunk.len();
                let block: Vec<f32> = (0..features).flat_map(|_| chunk.iter().copied()).collect();
                let mut filled = BinBlock::default();
                layout.bins.fill(&block, rows, &mut filled);
                let at = b.column as usize * rows;
                for (r, &v) in chunk.iter().enumerate() {
                    let bin = bin_of(edges, column.encoding, v);
                    let widths = layout.bins.widths;
                    assert!(widths & 7 != 0, "{name}: no width");
                    if widths & 1 != 0 {
                        assert_eq!(u32::from(filled.bytes[at + r]), bin, "{name}: u8 bin of {v}");
                    }
                    if widths & 2 != 0 {
                        assert_eq!(u32::from(filled.halves[at + r]), bin, "{name}: u16 bin of {v}");
                    }
                    if widths & 4 != 0 {
                        assert_eq!(filled.words[at + r], bin, "{name}: u32 bin of {v}");
                    }
                }
            }
        }
    }
    checked
}

#[test]
fn binned_comparisons_equal_the_float_comparisons_at_every_threshold_of_each_fixture() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/onnx/trees");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("the tree fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "onnx"))
        .collect();
    names.sort();
    let mut binned_exports = Vec::new();
    let mut table_counts: Vec<(String, usize)> = Vec::new();
    for path in &names {
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let proto = crate::onnx::external::read_model(path).expect("a fixture");
        for node in proto.graph.iter().flat_map(|g| &g.node) {
            let ensemble = match node.op_type.as_str() {
                "TreeEnsemble" => crate::trees::ensemble::Ensemble::from_opset5(node),
                "TreeEnsembleClassifier" | "TreeEnsembleRegressor" => crate::trees::ensemble::Ensemble::from_node(node),
                _ => continue,
            }
            .expect("a covered ensemble");
            let checked = check_bins(&name, &ensemble.layout);
            let layout = &ensemble.layout;
            let masked = layout.masked.iter().flatten().count();
            let binned: Vec<&Binned> = layout.masked.iter().flatten().filter_map(|m| m.binned.as_ref()).collect();
            let width = |w: u8| binned.iter().filter(|b| b.width == w).count();
            // What is binned, for the record (`--nocapture`).
            println!(
                "{name} {}: {} trees, {masked} masked, {} binned (u8 {}, u16 {}, u32 {}), {} binned features, {checked} comparisons checked",
                node.op_type,
                layout.trees.len(),
                binned.len(),
                width(1),
                width(2),
                width(4),
                layout.bins.edges.len()
            );
            if checked > 0 {
                binned_exports.push(name.clone());
            }
            // The binned trees' set tables, for the record: `tests/tree_executor.rs` (probabilities
            // to the bit against ONNX Runtime) runs `leaves_with` on these exports.
            let mut tables: Vec<usize> = binned.iter().map(|b| b.tables.len()).collect();
            tables.sort_unstable();
            tables.dedup();
            println!("{name}: binned trees' set tables, counts {tables:?}");
            table_counts.extend(tables.iter().map(|&count| (name.clone(), count)));
        }
    }
    // Every arm of `leaves_with` but one set table (the equality-chain test's) and the tables
    // looked up before it (more than four) run on a fixture: LightGBM's trees have 2 to 6 set
    // tables, the other boosted exports' none.
    let counts = |name: &str| -> Vec<usize> { table_counts.iter().filter(|(n, _)| n == name).map(|(_, c)| *c).collect() };
    assert_eq!(counts("lightgbm_categorical"), [2, 3, 4, 5, 6], "lightgbm_categorical's binned trees' counts of set tables");
    assert_eq!(counts("xgboost"), [0], "xgboost's binned trees' counts of set tables");
    // The boosted exports' trees are binned (the forests' are walked, CatBoost's are tables).
    for expected in ["lightgbm_categorical", "lightgbm_multiclass", "sklearn_gbc", "sklearn_hgb", "xgboost", "xgboost_multiclass"] {
        assert!(binned_exports.iter().any(|n| n == expected), "{expected} is not binned: {binned_exports:?}");
    }
}

#[test]
fn a_bin_is_above_its_cut_in_every_width_exactly_when_it_is_as_unsigned_integers() {
    // `Word::above` compares u16 and u32 bins as signed integers, which is exact only because bins
    // and cuts stay below 256 (2 · MAX_EDGES + 1 at most): every pair of them, in every width.
    let top = 2 * MAX_EDGES as u32 + 1;
    assert!(top < 256, "bins no longer fit a u8: {top}");
    for bin in 0..=top {
        for cut in 0..=top {
            let above = bin > cut;
            assert_eq!(u8::from_u32(bin).above(u8::from_u32(cut)) == u8::MAX, above, "u8 {bin} > {cut}");
            assert_eq!(u16::from_u32(bin).above(u16::from_u32(cut)) == u16::MAX, above, "u16 {bin} > {cut}");
            assert_eq!(u32::from_u32(bin).above(u32::from_u32(cut)) == u32::MAX, above, "u32 {bin} > {cut}");
            assert_eq!(u32::from_u32(bin).above(u32::from_u32(cut)) == 0, !above, "u32 {bin} > {cut}: a whole mask");
        }
    }
}
