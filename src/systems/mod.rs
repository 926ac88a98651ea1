//! Systems under test that live in their own folders. `external`: any system described by a
//! TOML spec (`systems/*.toml`) with a client program speaking JSON lines.

pub mod external;
