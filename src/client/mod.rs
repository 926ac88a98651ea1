//! Clients that perform workload ops against a system (placeholder).

pub mod etcd;
