//! Windows: containment in a kill-on-close Job Object, identity from the
//! process creation time, write-through replaces. (Being written.)
