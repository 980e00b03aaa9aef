//! Which PostgreSQL server to load: a connection string (a URL or libpq's
//! `key=value` form), with what it leaves out taken from libpq's
//! environment (`PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGPASSWORD`)
//! and then libpq's defaults, so that dyno reaches the server psql and
//! pgbench would reach from the same shell.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use tokio_postgres::config::Host;
use tokio_postgres::{Client, Config, NoTls};

use crate::wire::{self, Endpoint, Wire, WireError};

/// Where libpq looks for the server's socket on Debian when nothing says.
const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";
const DEFAULT_PORT: u16 = 5432;
/// An unreachable host fails after this, not after the kernel's minutes.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A server and the role and database to use on it.
#[derive(Clone)]
pub struct Target {
    config: Config,
}

/// Why a connection could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error(
        "the connection string is not valid: {0}; give a URL such as postgres://user@host:5432/db, or key=value pairs such as 'host=/var/run/postgresql dbname=bench'"
    )]
    Invalid(String),
    #[error("could not connect to PostgreSQL at {target}: {why}")]
    Connect { target: String, why: String },
}

impl Target {
    /// `conninfo` (empty: none) completed from `env` (libpq's variables,
    /// read by name) and libpq's defaults.
    pub fn new(
        conninfo: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Target, TargetError> {
        let conninfo = conninfo.trim();
        let mut config = if conninfo.is_empty() {
            Config::new()
        } else if !conninfo.contains(['=', ':', '/', ' ']) {
            // A bare word is a database name, as pgbench's DBNAME is.
            let mut config = Config::new();
            config.dbname(conninfo);
            config
        } else {
            Config::from_str(conninfo).map_err(|e| TargetError::Invalid(e.to_string()))?
        };
        if config.get_hosts().is_empty() {
            let hosts = env("PGHOST").unwrap_or_else(|| DEFAULT_SOCKET_DIR.into());
            for host in hosts.split(',') {
                if host.starts_with('/') {
                    config.host_path(host);
                } else {
                    config.host(host);
                }
            }
        }
        if config.get_ports().is_empty() {
            let port = match env("PGPORT") {
                Some(p) => p.parse().map_err(|_| {
                    TargetError::Invalid(format!("PGPORT is '{p}', not a port number"))
                })?,
                None => DEFAULT_PORT,
            };
            config.port(port);
        }
        if config.get_user().is_none() {
            let user = env("PGUSER")
                .or_else(|| env("USER"))
                .unwrap_or_else(|| "postgres".into());
            config.user(&user);
        }
        if config.get_dbname().is_none() {
            let db =
                env("PGDATABASE").unwrap_or_else(|| config.get_user().unwrap_or("").to_owned());
            config.dbname(&db);
        }
        if config.get_password().is_none()
            && let Some(password) = env("PGPASSWORD")
        {
            config.password(password);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("dyno");
        }
        Ok(Target { config })
    }

    /// From the process's environment.
    pub fn from_env(conninfo: &str) -> Result<Target, TargetError> {
        Target::new(conninfo, |name| std::env::var(name).ok())
    }

    /// Opens a connection and drives it on the current tokio runtime.
    pub async fn connect(&self) -> Result<Client, TargetError> {
        let (client, connection) =
            self.config
                .connect(NoTls)
                .await
                .map_err(|e| TargetError::Connect {
                    target: self.to_string(),
                    why: connect_hint(&e),
                })?;
        tokio::spawn(async move {
            // Its end (the server went away) shows as the client's next
            // error, where it is reported.
            let _ = connection.await;
        });
        Ok(client)
    }
}

impl Target {
    /// Opens the load loop's own kind of connection ([`Wire`]) to the
    /// first of the hosts that answers, as libpq tries them in turn.
    pub async fn connect_wire(&self) -> Result<Wire, TargetError> {
        let config = &self.config;
        let ports = config.get_ports();
        let mut last = None;
        for (i, host) in config.get_hosts().iter().enumerate() {
            let port = ports
                .get(i)
                .or(ports.first())
                .copied()
                .unwrap_or(DEFAULT_PORT);
            let endpoint = Endpoint {
                host: match host {
                    Host::Tcp(name) => wire::Host::Tcp(name),
                    Host::Unix(dir) => wire::Host::Unix(dir),
                },
                port,
                user: config.get_user().unwrap_or(""),
                password: config.get_password(),
                database: config.get_dbname().unwrap_or(""),
                application_name: config.get_application_name(),
                options: config.get_options(),
                timeout: config
                    .get_connect_timeout()
                    .copied()
                    .unwrap_or(CONNECT_TIMEOUT),
            };
            match Wire::connect(&endpoint).await {
                Ok(wire) => return Ok(wire),
                // The server answered and said no: another host would not
                // know better.
                Err(e @ WireError::Server { .. }) => {
                    last = Some(e);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let why = match last {
            Some(e) => wire_hint(&e),
            None => "no host to connect to".to_owned(),
        };
        Err(TargetError::Connect {
            target: self.to_string(),
            why,
        })
    }
}

/// Shown without the password.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hosts: Vec<String> = self
            .config
            .get_hosts()
            .iter()
            .map(|h| match h {
                Host::Tcp(name) => name.clone(),
                Host::Unix(path) => socket_name(path),
            })
            .collect();
        let port = self
            .config
            .get_ports()
            .first()
            .copied()
            .unwrap_or(DEFAULT_PORT);
        write!(
            f,
            "{}@{}:{port}/{}",
            self.config.get_user().unwrap_or(""),
            hosts.join(","),
            self.config.get_dbname().unwrap_or("")
        )
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Target({self})")
    }
}

fn socket_name(dir: &Path) -> String {
    format!("[socket in {}]", dir.display())
}

/// The server's own words when it said no, else the client's, with what to
/// check.
fn connect_hint(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let hint = match db.code().code() {
            "28P01" | "28000" => {
                "; check the user and the password (PGUSER, PGPASSWORD or the connection string)"
            }
            "3D000" => "; create the database first (createdb), or name another one",
            _ => "",
        };
        return format!("{}{hint}", db.message());
    }
    let text = std::error::Error::source(e).map_or_else(|| e.to_string(), |s| s.to_string());
    format!(
        "{text}; is the server running and accepting connections there? Set PGHOST and PGPORT, or give a connection string"
    )
}

/// [`connect_hint`] for the load loop's connections.
fn wire_hint(e: &WireError) -> String {
    match e.code() {
        Some("28P01" | "28000") => format!(
            "{e}; check the user and the password (PGUSER, PGPASSWORD or the connection string)"
        ),
        Some("3D000") => format!("{e}; create the database first (createdb), or name another one"),
        Some(_) => e.to_string(),
        None => format!(
            "{e}; is the server running and accepting connections there? Set PGHOST and PGPORT, or give a connection string"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_environment_fills_what_the_string_leaves_out_as_libpq_does() {
        let vars = [
            ("PGHOST", "/tmp/sock"),
            ("PGPORT", "6000"),
            ("PGUSER", "bench"),
            ("PGPASSWORD", "secret"),
        ];
        let t = Target::new("", env(&vars)).unwrap();
        assert_eq!(t.to_string(), "bench@[socket in /tmp/sock]:6000/bench");
        assert_eq!(t.config.get_password(), Some(&b"secret"[..]));
        let t = Target::new("postgres://other@db.example:5433/shop", env(&vars)).unwrap();
        assert_eq!(t.to_string(), "other@db.example:5433/shop");
        let t = Target::new("dbname=x", env(&[])).unwrap();
        assert_eq!(t.config.get_ports(), [5432]);
        assert!(
            t.to_string().contains("[socket in /var/run/postgresql]"),
            "{t}"
        );
    }

    #[test]
    fn a_bare_word_is_a_database_name_as_for_pgbench() {
        let t = Target::new("bench", env(&[("PGHOST", "/tmp/sock"), ("PGUSER", "me")])).unwrap();
        assert_eq!(t.to_string(), "me@[socket in /tmp/sock]:5432/bench");
    }

    #[test]
    fn bad_strings_and_ports_say_what_to_give() {
        let e = Target::new("postgres://h:notaport/db", env(&[])).unwrap_err();
        assert!(e.to_string().contains("postgres://user@host"), "{e}");
        let e = Target::new("", env(&[("PGPORT", "x")])).unwrap_err();
        assert!(e.to_string().contains("PGPORT is 'x'"), "{e}");
    }
}
