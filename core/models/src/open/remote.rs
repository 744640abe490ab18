//! Opening a model where it runs: a KServe V2 server (HTTP/JSON or gRPC), an MLflow scoring
//! server or a program; its output is chosen on the data's first rows.

use std::sync::Arc;

use super::{check_protected_read_at, read_output, OpenRequest, Opened, Remote};
use crate::error::ModelError;
use crate::model::Model;
use crate::onnx::ort::OutputChoice;
use crate::remote::command::CommandBackend;
use crate::remote::grpc::GrpcBackend;
use crate::remote::mlflow::{declared_inputs, MlflowBackend};
use crate::remote::v2::V2Backend;
use crate::remote::{Backend, RemoteModel};
use fairpipe_data::Dataset;

/// Connect to the model server (or start the program) `remote` and choose its output on the
/// data's first rows.
pub(super) fn open(request: &OpenRequest, remote: &Remote, data: &Dataset, opened: &mut Opened) -> Result<Arc<dyn Model>, ModelError> {
    let favourable = request.favourable(data);
    let rows: Vec<f64> = data.x.iter().take(256 * data.domain.width()).copied().collect();
    let choice = OutputChoice { name: request.output.as_deref(), transform: request.transform, favourable, classes: Vec::new() };
    let (backend, declared): (Box<dyn Backend>, _) = match remote {
        Remote::Server { endpoint, settings, outputs, grpc: false, seen } => {
            let (backend, metadata) = V2Backend::connect(endpoint.clone(), settings.clone(), outputs.clone(), seen.clone())?;
            (Box::new(backend) as Box<dyn Backend>, metadata.inputs)
        }
        Remote::Server { endpoint, settings, outputs, grpc: true, seen } => {
            let (backend, metadata) = GrpcBackend::connect(endpoint.clone(), settings.clone(), outputs.clone(), seen.clone())?;
            (Box::new(backend) as Box<dyn Backend>, metadata.inputs)
        }
        Remote::Mlflow { endpoint, settings, seen_ready } => {
            let backend = MlflowBackend::connect(endpoint.clone(), settings.clone(), *seen_ready)?;
            (Box::new(backend) as Box<dyn Backend>, declared_inputs(&data.domain, &data.coded))
        }
        Remote::Program { argv, dir } => {
            let columns = data.domain.attributes.iter().map(|a| a.name.clone()).collect();
            (Box::new(CommandBackend::start(argv, dir, columns)?) as Box<dyn Backend>, Vec::new())
        }
    };
    let location = backend.location();
    let model = RemoteModel::load(backend, declared, request.traffic.clone(), &data.domain, &request.feeding(data), choice, &rows)?;
    let read = model.input_plan().attributes_read(data.domain.width());
    check_protected_read_at(&location, data, &read)?;
    read_output(opened, model.output_name(), model.reader());
    opened.input_contract = Some(model.input_plan().describe());
    opened.remote_inputs = Some(if matches!(remote, Remote::Mlflow { .. }) {
        format!("the data's {} columns by name (dataframe_split)", data.domain.width())
    } else if model.metadata_lists_inputs() {
        "listed by the server's metadata".into()
    } else if matches!(remote, Remote::Program { .. }) {
        format!("a JSON line of the encoded rows ({} columns) per batch", data.domain.width())
    } else {
        format!(
            "the server's metadata lists no inputs: one FP64 input \"input-0\" [N,{}] assumed (the encoded features)",
            data.domain.width()
        )
    });
    opened.executor = Some(model.executor());
    Ok(Arc::new(model))
}
