//! What needs root: a real full disk (a small tmpfs mounted for the test).

mod disk_full;
