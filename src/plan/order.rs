//! A plan's dependency order and the message of a dependency cycle.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::{CYCLE_NAMES, PlanUnit};

/// The units' indices in dependency order: each after all of its
/// dependencies, otherwise in file order (Kahn's algorithm, always taking the
/// earliest ready unit). `Err`: a cycle, as indices in dependency order.
/// O((units + dependencies) · log units), no recursion, for plans of any size.
pub(super) fn dependency_order(
    units: &[PlanUnit],
    index: &HashMap<String, usize>,
) -> std::result::Result<Vec<usize>, Vec<usize>> {
    let mut waiting: Vec<usize> = units.iter().map(|u| u.depends_on.len()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); units.len()];
    for (i, u) in units.iter().enumerate() {
        for d in &u.depends_on {
            dependents[index[d]].push(i);
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..units.len())
        .filter(|&i| waiting[i] == 0)
        .map(Reverse)
        .collect();
    let mut order = Vec::with_capacity(units.len());
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        for &j in &dependents[i] {
            waiting[j] -= 1;
            if waiting[j] == 0 {
                ready.push(Reverse(j));
            }
        }
    }
    if order.len() == units.len() {
        return Ok(order);
    }
    Err(cycle_among(units, index, &waiting))
}

/// A cycle among the units Kahn's algorithm left (those still `waiting`).
/// Each of them waits on another one left, so following those links from the
/// first must come back round: at most one step per unit.
fn cycle_among(
    units: &[PlanUnit],
    index: &HashMap<String, usize>,
    waiting: &[usize],
) -> Vec<usize> {
    let left = |j: &usize| waiting[*j] > 0;
    let mut on_path: Vec<Option<usize>> = vec![None; units.len()];
    let mut path = Vec::new();
    let mut at = (0..units.len()).find(left);
    while let Some(i) = at {
        if let Some(start) = on_path[i] {
            return path.split_off(start);
        }
        on_path[i] = Some(path.len());
        path.push(i);
        at = units[i].depends_on.iter().map(|d| index[d]).find(left);
    }
    path // unreachable for a real cycle; never panic on it
}

/// `dependency cycle: a -> b -> c -> a`; a long cycle names its first
/// [`CYCLE_NAMES`] units and how many more there are.
pub(super) fn cycle_message(units: &[PlanUnit], cycle: &[usize]) -> String {
    let name = |i: &usize| units[*i].name.as_str();
    let shown: Vec<&str> = cycle.iter().take(CYCLE_NAMES).map(name).collect();
    let first = cycle.first().map_or("", name);
    match cycle.len().saturating_sub(CYCLE_NAMES) {
        0 => format!("dependency cycle: {} -> {first}", shown.join(" -> ")),
        more => format!(
            "dependency cycle of {} units: {} -> … ({more} more) -> {first}",
            cycle.len(),
            shown.join(" -> ")
        ),
    }
}
