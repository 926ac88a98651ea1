//! etcd v3 client (placeholder).
