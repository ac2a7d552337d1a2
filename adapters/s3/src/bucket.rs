//! The client every store of a deployment shares, the bucket and the key prefix.

use aws_config::provider_config::ProviderConfig;
use aws_sdk_s3::config::SharedHttpClient;
use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{
    BehaviorVersion, Region, RequestChecksumCalculation, ResponseChecksumValidation,
};
use aws_smithy_http_client::proxy::ProxyConfig;
use aws_smithy_http_client::{ConnectorBuilder, tls};
use memory_core::ports::validate_blob_prefix;
use memory_core::{MemoryError, Result};

use crate::config::{Credentials, S3Config};
use crate::error::{S3AdapterError, s3};

/// A bucket of a deployment: one client (its connection pool), the bucket, the prefix of
/// every key.
#[derive(Debug, Clone)]
pub struct S3Bucket {
    pub(crate) client: aws_sdk_s3::Client,
    pub(crate) bucket: String,
    pub(crate) prefix: String,
    pub(crate) conditional_writes: bool,
}

impl S3Bucket {
    /// Builds the client and checks that the bucket answers (`HeadBucket`): a missing bucket
    /// or refused credentials fail here, naming the bucket, not at the first write.
    pub async fn connect(config: S3Config) -> Result<Self> {
        let prefix_ok = config.prefix.is_empty()
            || (config.prefix.ends_with('/') && validate_blob_prefix(&config.prefix).is_ok());
        if !prefix_ok {
            return Err(MemoryError::invalid(
                S3AdapterError::BadPrefix(config.prefix).to_string(),
            ));
        }
        let http_client = https_client();
        let mut builder = aws_sdk_s3::Config::builder()
            .http_client(http_client.clone())
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(config.region.clone()))
            .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
            .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
            .retry_config(RetryConfig::standard().with_max_attempts(config.max_attempts))
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(std::time::Duration::from_secs(10))
                    .operation_attempt_timeout(config.timeout)
                    .build(),
            );
        if let Some(endpoint) = &config.endpoint {
            builder = builder.endpoint_url(endpoint).force_path_style(true);
        }
        builder = match &config.credentials {
            Credentials::Static {
                access_key_id,
                secret_access_key,
            } => builder.credentials_provider(aws_sdk_s3::config::Credentials::new(
                access_key_id,
                secret_access_key,
                None,
                None,
                "memory-config",
            )),
            Credentials::Profile(name) => builder.credentials_provider(
                aws_config::profile::ProfileFileCredentialsProvider::builder()
                    .configure(&ProviderConfig::default().with_http_client(http_client))
                    .profile_name(name)
                    .build(),
            ),
            Credentials::Default => builder.credentials_provider(
                aws_config::default_provider::credentials::DefaultCredentialsChain::builder()
                    .configure(ProviderConfig::default().with_http_client(http_client))
                    .region(Region::new(config.region.clone()))
                    .build()
                    .await,
            ),
        };
        let client = aws_sdk_s3::Client::from_conf(builder.build());
        client
            .head_bucket()
            .bucket(&config.bucket)
            .send()
            .await
            .map_err(|e| match s3("HeadBucket", e) {
                transient @ MemoryError::Transient { .. } => transient,
                other => MemoryError::backend(
                    crate::error::BACKEND,
                    S3AdapterError::Bucket {
                        bucket: config.bucket.clone(),
                        message: other.to_string(),
                    },
                ),
            })?;
        Ok(Self {
            client,
            bucket: config.bucket,
            prefix: config.prefix,
            conditional_writes: config.conditional_writes,
        })
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The object key of a deployment key.
    pub(crate) fn object(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// The deployment key of an object key (`None` outside the prefix).
    pub(crate) fn key_of<'a>(&self, object: &'a str) -> Option<&'a str> {
        object.strip_prefix(self.prefix.as_str())
    }
}

/// The HTTPS client of the bucket and of the credential providers that call AWS (SSO, STS,
/// instance metadata): what the SDK's default client is (hyper 1, rustls, the platform's
/// certificates, a proxy from `HTTPS_PROXY` and `NO_PROXY`), with rustls on ring instead of
/// aws-lc.
fn https_client() -> SharedHttpClient {
    aws_smithy_http_client::Builder::new().build_with_connector_fn(|settings, components| {
        let mut connector = ConnectorBuilder::default()
            .tls_provider(tls::Provider::Rustls(
                tls::rustls_provider::CryptoMode::Ring,
            ))
            .proxy_config(ProxyConfig::from_env());
        connector.set_connector_settings(settings.cloned());
        if let Some(components) = components {
            connector.set_sleep_impl(components.sleep_impl());
        }
        connector.build()
    })
}
