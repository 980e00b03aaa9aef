//! The throwaway PostgreSQL cluster `scripts/test` starts (`scripts/pg
//! start`), found by its folder in `DYNO_TEST_PG`. Tests fail without one
//! rather than pass without a server.

use std::path::Path;
use std::process::Command;

/// The cluster: how to reach it by socket (`env`) and by TCP (`url`).
#[derive(Debug, Clone)]
pub struct Pg {
    /// PGHOST, PGPORT, PGUSER as the folder's env file has them.
    pub env: Vec<(String, String)>,
    /// postgres://postgres:PASSWORD@127.0.0.1:PORT/postgres
    pub url: String,
}

impl Pg {
    /// The cluster of `DYNO_TEST_PG`; panics, saying how to start one,
    /// without it.
    pub fn from_env() -> Pg {
        let dir = std::env::var("DYNO_TEST_PG").expect(
            "these tests need a PostgreSQL server: run scripts/test, or start one with `scripts/pg start` and set DYNO_TEST_PG to the folder it prints",
        );
        let dir = Path::new(&dir);
        let text = std::fs::read_to_string(dir.join("env")).unwrap();
        let env = text
            .lines()
            .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .filter(|(k, _)| k != "PGDATABASE")
            .collect();
        let url = std::fs::read_to_string(dir.join("url"))
            .unwrap()
            .trim()
            .to_owned();
        Pg { env, url }
    }

    /// A new, empty database of its own for one test; its name.
    pub fn database(&self) -> String {
        let name = format!("dyno_test_{}", fastrand::u64(..));
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        name
    }

    /// The TCP URL of database `name`.
    pub fn url_of(&self, name: &str) -> String {
        let base = self
            .url
            .rsplit_once('/')
            .map_or(self.url.as_str(), |(b, _)| b);
        format!("{base}/{name}")
    }

    /// psql's answer to `sql` in `db`, unaligned.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = Command::new("psql")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .args(["-X", "-tA", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }
}
