/// What can go wrong talking to Postgres, in terms a caller can act on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The server could not be reached or the pool timed out.
    #[error("database unavailable")]
    Unavailable(#[source] sqlx::Error),
    /// A uniqueness rule refused the write; `constraint` names which.
    #[error("already exists ({constraint})")]
    Conflict { constraint: String },
    /// A check constraint refused a value; `constraint` names which.
    #[error("value refused by {constraint}")]
    Invalid { constraint: String },
    #[error("not found: {0}")]
    NotFound(String),
    /// The change would take the tenant past a quota; nothing was applied.
    #[error(transparent)]
    Quota(#[from] crate::QuotaExceeded),
    #[error("bad database configuration: {0}")]
    Config(String),
    #[error("migration failed")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database error")]
    Database(#[source] sqlx::Error),
}

/// A store failure inside a call, as [`StoreError::answer`] answers it. A quota refusal is
/// answered as such by the kernel's `store_refusal`, where a change can meet one.
impl From<StoreError> for otc_errors::ToolError {
    fn from(err: StoreError) -> Self {
        err.answer()
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        match &err {
            sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::PoolClosed => {
                StoreError::Unavailable(err)
            }
            sqlx::Error::Database(db) => {
                let constraint = db.constraint().unwrap_or("unnamed").to_string();
                match db.code().as_deref() {
                    Some("23505") => StoreError::Conflict { constraint },
                    Some("23514") | Some("23502") => StoreError::Invalid { constraint },
                    // The server going away: an administrator's or a crash's shutdown, one not
                    // taking connections yet, too many connections, a connection exception.
                    Some("57P01" | "57P02" | "57P03" | "53300") => StoreError::Unavailable(err),
                    Some(code) if code.starts_with("08") => StoreError::Unavailable(err),
                    _ => StoreError::Database(err),
                }
            }
            _ => StoreError::Database(err),
        }
    }
}

impl StoreError {
    /// What a caller is answered for this failure, its whole chain logged (under the call's
    /// span, which names the tool): `service_unavailable` naming Postgres when it could not be
    /// reached, else `internal_error`.
    pub fn answer(&self) -> otc_errors::ToolError {
        use otc_errors::{ErrorCode, ToolError};
        tracing::error!(error = %otc_errors::error_chain(self), "store failed");
        match self {
            StoreError::Unavailable(_) => {
                ToolError::with_message(ErrorCode::ServiceUnavailable, "the database is unavailable")
                    .detail("dependency", "postgres")
            }
            _ => ToolError::new(ErrorCode::InternalError),
        }
    }

    /// Whether the database could not be reached at all (as opposed to refusing a query).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, StoreError::Unavailable(_))
    }
}
