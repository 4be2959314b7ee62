//! Issue 41's closed loops on scripted fakes: fix rounds after a failed
//! `verify`, a reviewer's gate, budgets, and a `kill -9` in a round then a
//! resume that goes on at that round. (Conflicts: `workspace/conflict`.)

#[path = "loops/crash.rs"]
mod crash;
#[path = "loops/fakes.rs"]
mod fakes;
#[path = "loops/fix.rs"]
mod fix;
#[path = "loops/review.rs"]
mod review;
