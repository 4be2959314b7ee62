//! ground

pub mod env;
pub mod error;
pub mod fsutil;
pub mod names;
pub mod offload;
pub mod procinfo;
pub mod state;
pub mod text;
pub mod tls;
pub mod version;
