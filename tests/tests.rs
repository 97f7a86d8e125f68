//! Integration tests, one binary: real tmux servers and local protocol servers.
//! Each area adds its own module below.
