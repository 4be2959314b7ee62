//! The plan's DAG rules, pure: a waiting unit is blocked once a dependency
//! will never let it run, and may start once every dependency is done, there
//! is room, and no wait of its own is in progress. The local executor
//! ([`super::Run`]) and the Temporal workflow (`temporal::workflow`) decide
//! with the same rules; neither writes them again.

use super::RunState;
use crate::ground::error::Result;

/// What acts on the DAG's decisions, beside [`super::Reporter`] which tells
/// what happened: the local executor (each unit through `dispatch::run` in
/// this process) and the Temporal workflow (each unit attempt an activity on
/// a worker). The rules that decide are [`Dag::drive`]'s, for both.
pub trait Executor {
    /// Unit `i` will never run: a dependency will not let it.
    fn block(&mut self, i: usize, why: String) -> Result<()>;
    /// Unit `i` may start now: begin its attempt.
    fn start(&mut self, i: usize) -> Result<()>;
}

/// Each unit's dependencies: the name (for messages) and its place in the
/// plan (`None`: not in it, which counts as failed).
#[derive(Debug, Clone, Default)]
pub struct Dag {
    deps: Vec<Vec<(String, Option<usize>)>>,
}

/// Where a waiting unit's dependencies stand.
#[derive(Debug, PartialEq, Eq)]
pub enum Deps {
    /// One will never let it run: why.
    Blocked(String),
    /// Every one is done.
    Done,
    Pending,
}

/// One decision of a [`Dag::sweep`], in the order it was taken.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    Block(usize, String),
    Start(usize),
}

impl Dag {
    /// `units`: each unit's name and its `depends_on`, in plan order. Each
    /// dependency is found once by name (a plan of 10,000 units would
    /// otherwise search the plan for each dependency at every start).
    pub fn new<'a>(units: impl Iterator<Item = (&'a str, &'a [String])> + Clone) -> Dag {
        let mut at: std::collections::HashMap<&str, usize> = Default::default();
        for (i, (name, _)) in units.clone().enumerate() {
            at.entry(name).or_insert(i);
        }
        let deps = units
            .map(|(_, deps)| {
                let place = |d: &String| (d.clone(), at.get(d.as_str()).copied());
                deps.iter().map(place).collect()
            })
            .collect();
        Dag { deps }
    }

    pub fn len(&self) -> usize {
        self.deps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.deps.is_empty()
    }

    /// Unit `i`'s dependencies, by place (`None`: not in the plan).
    pub fn places(&self, i: usize) -> impl Iterator<Item = (&str, Option<usize>)> {
        self.deps[i].iter().map(|(d, at)| (d.as_str(), *at))
    }

    /// Where unit `i`'s dependencies stand: the first that will never let it
    /// run blocks it.
    pub fn deps_of(&self, i: usize, states: &[RunState]) -> Deps {
        let mut done = true;
        for (d, at) in &self.deps[i] {
            let s = at.map_or(RunState::Failed, |j| states[j]);
            if s.blocks_dependents() {
                return Deps::Blocked(format!("dependency {d:?} is {}", s.as_str()));
            }
            done &= s == RunState::Done;
        }
        if done { Deps::Done } else { Deps::Pending }
    }

    /// One [`Dag::sweep`], each decision handed to `exec` in the order taken.
    pub fn drive(
        &self,
        states: &mut [RunState],
        room: usize,
        due: impl Fn(usize) -> bool,
        exec: &mut dyn Executor,
    ) -> Result<()> {
        for step in self.sweep(states, room, due) {
            match step {
                Step::Block(i, why) => exec.block(i, why)?,
                Step::Start(i) => exec.start(i)?,
            }
        }
        Ok(())
    }

    /// Blocks what cannot run and starts what can (at most `room`, each
    /// `due`), until nothing changes. `states` takes each decision at once
    /// (`Blocked`, `Running`), so dependents see it in the same sweep.
    pub fn sweep(
        &self,
        states: &mut [RunState],
        mut room: usize,
        due: impl Fn(usize) -> bool,
    ) -> Vec<Step> {
        let mut steps = Vec::new();
        loop {
            let mut changed = false;
            for i in 0..states.len() {
                if states[i] != RunState::Waiting {
                    continue;
                }
                match self.deps_of(i, states) {
                    Deps::Blocked(why) => {
                        states[i] = RunState::Blocked;
                        steps.push(Step::Block(i, why));
                        changed = true;
                    }
                    Deps::Done if room > 0 && due(i) => {
                        states[i] = RunState::Running;
                        room -= 1;
                        steps.push(Step::Start(i));
                        changed = true;
                    }
                    Deps::Done | Deps::Pending => {}
                }
            }
            if !changed {
                return steps;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use RunState::*;

    fn dag(units: &[(&str, &[&str])]) -> (Dag, Vec<Vec<String>>) {
        let deps: Vec<Vec<String>> = units
            .iter()
            .map(|(_, d)| d.iter().map(|s| s.to_string()).collect())
            .collect();
        let names: Vec<&str> = units.iter().map(|(n, _)| *n).collect();
        let it = names.iter().copied().zip(deps.iter().map(|d| d.as_slice()));
        (Dag::new(it.collect::<Vec<_>>().into_iter()), deps)
    }

    #[test]
    fn a_failure_blocks_the_whole_chain_in_one_sweep_and_room_bounds_starts() {
        let (d, _) = dag(&[
            ("a", &[]),
            ("b", &["a"]),
            ("c", &["b"]),
            ("x", &[]),
            ("y", &[]),
        ]);
        let mut states = vec![Failed, Waiting, Waiting, Waiting, Waiting];
        let steps = d.sweep(&mut states, 1, |_| true);
        assert_eq!(
            steps,
            vec![
                Step::Block(1, "dependency \"a\" is failed".into()),
                Step::Block(2, "dependency \"b\" is blocked".into()),
                Step::Start(3),
            ]
        );
        assert_eq!(states, vec![Failed, Blocked, Blocked, Running, Waiting]);
    }

    #[test]
    fn a_unit_waits_for_every_dependency_and_for_its_own_wait() {
        let (d, _) = dag(&[("a", &[]), ("b", &[]), ("c", &["a", "b"])]);
        let mut states = vec![Done, Running, Waiting];
        assert_eq!(d.deps_of(2, &states), Deps::Pending);
        assert!(d.sweep(&mut states, 5, |_| true).is_empty());
        states[1] = Done;
        assert!(d.sweep(&mut states, 5, |i| i != 2).is_empty());
        assert_eq!(d.sweep(&mut states, 5, |_| true), vec![Step::Start(2)]);
    }
}
