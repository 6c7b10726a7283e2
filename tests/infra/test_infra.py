"""The CDK app, synthesized offline: what the templates grant, retain, alarm on and scale by; cfn-lint
over every template; cdk-nag's AWS Solutions rules gate the synth itself."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent.config import AgentSettings
from infra.settings import KOKORO_VOICES_SHA256, KOKORO_VOICES_URL, InfraSettings
from tests.support.infra import resources, synthesize

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = InfraSettings()
# Actions AWS offers no resource-level permission for: the only ones allowed on "*".
RESOURCELESS_ACTIONS = {"ecr:GetAuthorizationToken", "cloudwatch:PutMetricData", "xray:PutTraceSegments",
                        "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets"}


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory) -> tuple[Path, dict[str, dict]]:
    outdir = tmp_path_factory.mktemp("cdk.out")
    return outdir, synthesize(outdir)


@pytest.fixture(scope="module")
def main(synthesized) -> dict:
    return synthesized[1][SETTINGS.stack_name]


@pytest.fixture(scope="module")
def staging(synthesized) -> dict:
    return synthesized[1][SETTINGS.staging_stack_name]


def statements(template: dict, role_prefix: str) -> list[dict]:
    policies = [body for body in resources(template, "AWS::IAM::Policy").values()
                if any(role["Ref"].startswith(role_prefix) for role in body["Properties"]["Roles"])]
    assert policies, f"no policy for {role_prefix}"
    return [statement for policy in policies for statement in policy["Properties"]["PolicyDocument"]["Statement"]]


def as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def arn_text(resource) -> str:
    """A resource ARN as text, with CloudFormation's pseudo parameters as ${...}."""
    if isinstance(resource, str):
        return resource
    if "Fn::Sub" in resource:
        return resource["Fn::Sub"]
    parts = resource["Fn::Join"][1]
    return "".join(part if isinstance(part, str) else "${" + part["Ref"] + "}" for part in parts)


def test_the_tts_image_asset_carries_the_bidirectional_capability_label_and_the_gpu_build(synthesized, main):
    outdir, _ = synthesized
    (model,) = resources(main, "AWS::SageMaker::Model").values()
    image = arn_text(model["Properties"]["PrimaryContainer"]["Image"])
    assert re.search(r"/voiceagent/tts:[0-9a-f]{64}$", image), image
    asset_hash = image.rsplit(":", 1)[1]
    manifest = json.loads((outdir / "VoiceAgent.assets.json").read_text())
    source = manifest["dockerImages"][f"tts-{asset_hash}"]["source"]
    assert source["dockerFile"] == "Dockerfile.tts"
    # ml.g5.xlarge is a GPU instance; the deployment speaks English: Kokoro v1.0's voices, verified at build time.
    assert source["dockerBuildArgs"] == {"VARIANT": "gpu", "VOICES_URL": KOKORO_VOICES_URL,
                                         "VOICES_SHA256": KOKORO_VOICES_SHA256, "DEFAULT_VOICE": "af_heart"}
    assert model["Properties"]["PrimaryContainer"]["Environment"]["VOICE_AGENT_DEFAULT_VOICE"] == "af_heart"
    assert source["platform"] == "linux/amd64"
    staged = (outdir / source["directory"] / "Dockerfile.tts").read_text()
    assert "LABEL com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true" in staged
    # The build context is only what the images copy (.dockerignore): no virtualenv, no test output.
    staged_names = {path.name for path in (outdir / source["directory"]).iterdir()}
    assert {"agent", "caller_protocol", "tts_server", "tts_protocol", "settings_table.py", "requirements-tts.lock",
            "requirements-agent.lock"} <= staged_names
    assert not staged_names & {".venv", "tests", "test-artifacts", ".git", "cdk.out", "voice_agent", "infra"}
    assert model["Properties"]["EnableNetworkIsolation"] is True


def test_the_endpoint_is_the_configured_instance_type_and_scales_on_concurrent_sessions(main):
    (config,) = resources(main, "AWS::SageMaker::EndpointConfig").values()
    (variant,) = config["Properties"]["ProductionVariants"]
    assert variant["InstanceType"] == "ml.g5.xlarge"
    assert variant["InitialInstanceCount"] == SETTINGS.tts_min_instances
    (endpoint,) = resources(main, "AWS::SageMaker::Endpoint").values()
    assert endpoint["Properties"]["EndpointName"] == SETTINGS.endpoint_name
    (target,) = resources(main, "AWS::ApplicationAutoScaling::ScalableTarget").values()
    assert target["Properties"]["ResourceId"] == f"endpoint/{SETTINGS.endpoint_name}/variant/AllTraffic"
    assert (target["Properties"]["MinCapacity"], target["Properties"]["MaxCapacity"]) == (1, 2)
    (policy,) = resources(main, "AWS::ApplicationAutoScaling::ScalingPolicy").values()
    tracking = policy["Properties"]["TargetTrackingScalingPolicyConfiguration"]
    assert tracking["PredefinedMetricSpecification"]["PredefinedMetricType"] == \
        "SageMakerVariantConcurrentRequestsPerModelHighResolution"
    assert tracking["TargetValue"] == SETTINGS.tts_sessions_per_instance


def test_a_cpu_instance_type_builds_the_cpu_image_with_the_voices_chosen_and_settings_are_validated(tmp_path):
    voices = {"voices_url": "https://example.com/voices/my-voices.bin", "voices_sha256": "ab" * 32, "voice": "bf_emma"}
    templates = synthesize(tmp_path, stack_name="Voice-Cpu", tts_instance_type="ml.c7i.xlarge", tts_max_instances=3,
                           **voices)
    manifest = json.loads((tmp_path / "VoiceAgent.assets.json").read_text())
    tts = [image for image in manifest["dockerImages"].values() if image["source"]["dockerFile"] == "Dockerfile.tts"]
    assert tts[0]["source"]["dockerBuildArgs"] == {"VARIANT": "cpu", "VOICES_URL": voices["voices_url"],
                                                   "VOICES_SHA256": "ab" * 32, "DEFAULT_VOICE": "bf_emma"}
    (runtime,) = resources(templates["Voice-Cpu"], "AWS::BedrockAgentCore::Runtime").values()
    assert runtime["Properties"]["EnvironmentVariables"]["VOICE_AGENT_VOICE"] == "bf_emma"
    (target,) = resources(templates["Voice-Cpu"], "AWS::ApplicationAutoScaling::ScalableTarget").values()
    assert target["Properties"]["MaxCapacity"] == 3
    # Without a voices file the image keeps the packaged voices and the container's own default.
    assert InfraSettings(voices_url="", tts_instance_type="ml.c7i.xlarge").tts_build_args == {"VARIANT": "cpu"}
    for bad in ({"tts_instance_type": "g5.xlarge"}, {"tts_min_instances": 3, "tts_max_instances": 2},
                {"stack_name": "9lives"}, {"bedrock_model_id": "model id with spaces"},
                {"voices_url": "https://example.com/other.bin"}, {"voices_sha256": "not-a-digest"}):
        with pytest.raises(ValueError):
            synthesize(tmp_path / "bad", **bad)


def test_the_agent_may_invoke_only_its_endpoint_and_its_model(main):
    granted = statements(main, "AgentExecutionRole")
    invoke = [s for s in granted if "sagemaker:InvokeEndpointWithBidirectionalStream" in as_list(s["Action"])]
    assert [arn_text(r) for s in invoke for r in as_list(s["Resource"])] == [
        "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:endpoint/voiceagent-tts"]
    bedrock = [s for s in granted if any(a.startswith("bedrock:") for a in as_list(s["Action"]))]
    assert sorted(a for s in bedrock for a in as_list(s["Action"])) == [
        "bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]
    assert sorted(arn_text(r) for s in bedrock for r in as_list(s["Resource"])) == [
        "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/" + SETTINGS.bedrock_model_id,
        "arn:${AWS::Partition}:bedrock:*::foundation-model/" + SETTINGS.foundation_model_id,
    ]
    assert not any(a.startswith("sagemaker:") for s in granted for a in as_list(s["Action"])
                   if a != "sagemaker:InvokeEndpointWithBidirectionalStream")


def test_no_role_has_a_wildcard_where_a_resource_can_be_named(main):
    for role_prefix in ("AgentExecutionRole", "TtsModelRole"):
        for statement in statements(main, role_prefix):
            actions = as_list(statement["Action"])
            assert not any(action == "*" or action.endswith(":*") for action in actions), statement
            if "*" in as_list(statement["Resource"]):
                assert set(actions) <= RESOURCELESS_ACTIONS, statement
                if "cloudwatch:PutMetricData" in actions:
                    assert "cloudwatch:namespace" in json.dumps(statement["Condition"])


def test_a_model_id_without_a_profile_is_granted_in_this_region_only(tmp_path):
    template = synthesize(tmp_path, bedrock_model_id="amazon.nova-lite-v1:0")[SETTINGS.stack_name]
    bedrock = [s for s in statements(template, "AgentExecutionRole") if "bedrock:InvokeModel" in as_list(s["Action"])]
    assert [arn_text(r) for s in bedrock for r in as_list(s["Resource"])] == [
        "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/amazon.nova-lite-v1:0"]


def test_the_runtime_environment_is_what_the_agent_reads(main, monkeypatch):
    (runtime,) = resources(main, "AWS::BedrockAgentCore::Runtime").values()
    environment = runtime["Properties"]["EnvironmentVariables"]
    assert runtime["Properties"]["AgentRuntimeName"] == SETTINGS.runtime_name
    for name in list(environment):
        if isinstance(environment[name], dict):  # the region is a deploy-time value
            environment[name] = "us-east-1"
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    agent = AgentSettings.from_env()
    assert (agent.model, agent.bedrock_model_id, agent.sagemaker_endpoint, agent.sagemaker_region) == (
        "bedrock", SETTINGS.bedrock_model_id, SETTINGS.endpoint_name, "us-east-1")
    (endpoint,) = resources(main, "AWS::BedrockAgentCore::RuntimeEndpoint").values()
    assert endpoint["Properties"]["Name"] == "live"


def test_every_alarm_notifies_the_topic_on_alarm_and_on_recovery(main):
    (topic,) = resources(main, "AWS::SNS::Topic")
    alarms = resources(main, "AWS::CloudWatch::Alarm")
    names = sorted(alarm["Properties"]["AlarmName"] for alarm in alarms.values())
    assert names == sorted(f"VoiceAgent-{n}" for n in ("AgentLatency", "AgentErrors", "AgentThrottles", "TtsErrors",
                                                        "TtsModelErrors", "TtsSessionsHigh"))
    for alarm in alarms.values():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic}]
        assert alarm["Properties"]["OKActions"] == [{"Ref": topic}]
        dimensions = {d["Name"]: d["Value"] for d in alarm["Properties"]["Dimensions"]}
        if alarm["Properties"]["Namespace"] == "AWS/SageMaker":
            assert dimensions == {"EndpointName": SETTINGS.endpoint_name, "VariantName": "AllTraffic"}
        else:  # the AgentCore runtime's own metrics
            assert alarm["Properties"]["Namespace"] == "AWS/Bedrock-AgentCore"
            assert "Resource" in dimensions, dimensions
    # CloudWatch can publish only to a topic under a key whose policy lets it (not aws/sns), and the
    # topic's own policy must let our alarms publish.
    (key_name, key), = resources(main, "AWS::KMS::Key").items()
    topic_key = resources(main, "AWS::SNS::Topic")[topic]["Properties"]["KmsMasterKeyId"]
    assert topic_key == {"Fn::GetAtt": [key_name, "Arn"]}
    assert key["Properties"]["EnableKeyRotation"] is True and key["DeletionPolicy"] == "Delete"
    (topic_policy,) = resources(main, "AWS::SNS::TopicPolicy").values()
    for statements_of, action in ((key["Properties"]["KeyPolicy"], "kms:GenerateDataKey*"),
                                  (topic_policy["Properties"]["PolicyDocument"], "sns:Publish")):
        (grant,) = [s for s in statements_of["Statement"]
                    if s["Effect"] == "Allow" and s["Principal"] == {"Service": "cloudwatch.amazonaws.com"}]
        assert action in as_list(grant["Action"])
        assert arn_text(grant["Condition"]["ArnLike"]["aws:SourceArn"]).endswith(":alarm:VoiceAgent-*")
    (dashboard,) = resources(main, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for metric in ("Invocation5XXErrors", "ModelLatency", "ConcurrentRequestsPerModel", "Latency", "Throttles"):
        assert metric in body


def test_only_the_staging_bucket_and_repositories_outlive_their_stacks_and_the_teardown_knows_them(main, staging):
    assert not [name for name, body in main["Resources"].items() if body.get("DeletionPolicy") == "Retain"]
    retained = {body["Type"]: body for body in staging["Resources"].values() if body.get("DeletionPolicy") == "Retain"}
    repositories = sorted(body["Properties"]["RepositoryName"] for body in staging["Resources"].values()
                          if body["Type"] == "AWS::ECR::Repository")
    assert repositories == sorted(SETTINGS.image_repositories)
    assert set(retained) == {"AWS::ECR::Repository", "AWS::S3::Bucket"}
    bucket = retained["AWS::S3::Bucket"]["Properties"]["BucketName"]
    assert arn_text(bucket) == SETTINGS.staging_bucket_name("${AWS::AccountId}", "${AWS::Region}")


def test_cfn_lint_passes_on_every_template(synthesized):
    outdir, templates = synthesized
    files = sorted(str(path) for path in outdir.glob("*.template.json"))
    assert len(files) == len(templates) == 2
    # From the repository root, so .cfnlintrc.yaml's two justified ignores apply and nothing else.
    cfn_lint = str(Path(sys.executable).with_name("cfn-lint"))
    result = subprocess.run([cfn_lint, *files], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_cdk_nag_passes_with_each_acknowledged_finding_justified(synthesized):
    outdir, _ = synthesized
    (report,) = json.loads((outdir / "validation-report.json").read_text())["pluginReports"]
    assert (report["pluginName"], report["conclusion"], report["violations"]) == ("AwsSolutions", "success", [])
    assert report["suppressedViolations"], "the acknowledged findings are listed in the report"


def test_an_unacknowledged_finding_fails_the_synth(tmp_path, monkeypatch):
    from aws_cdk import aws_iam as iam

    from infra import app as infra_app

    def with_a_wildcard_role(app=None):
        app, stack = build(app)
        iam.Role(stack, "TooBroad", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com")).add_to_policy(
            iam.PolicyStatement(actions=["s3:*"], resources=["*"]))
        return app, stack

    build = infra_app.build
    monkeypatch.setattr(infra_app, "build", with_a_wildcard_role)
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        infra_app.synthesize(tmp_path)
    report = json.loads((tmp_path / "validation-report.json").read_text())["pluginReports"][0]
    assert {v["ruleName"] for v in report["violations"]} == {"AwsSolutions-IAM5[Resource::*]",
                                                             "AwsSolutions-IAM5[Action::s3:*]"}


def test_a_stack_pinned_to_an_account_and_region_passes_cdk_nag_too(tmp_path, monkeypatch):
    # The CDK CLI fixes the region (and the account, given credentials): cdk-nag then writes them into
    # its findings, and the acknowledgements must still match.
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "123456789012")
    monkeypatch.setenv("CDK_DEFAULT_REGION", "eu-west-1")
    template = synthesize(tmp_path)[SETTINGS.stack_name]
    invoke = [s for s in statements(template, "AgentExecutionRole")
              if "sagemaker:InvokeEndpointWithBidirectionalStream" in as_list(s["Action"])]
    assert [arn_text(r) for s in invoke for r in as_list(s["Resource"])] == [
        "arn:${AWS::Partition}:sagemaker:eu-west-1:123456789012:endpoint/voiceagent-tts"]


def test_the_cdk_cli_synthesizes_the_app_from_cdk_json(tmp_path):
    cli = ROOT / "node_modules" / ".bin" / "cdk"
    if not cli.exists():
        assert not os.environ.get("CI"), "CI needs the CDK CLI: dev.sh installs it from package-lock.json"
        pytest.skip("no CDK CLI: run ./dev.sh test, or npm ci")
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("AWS_", "CDK_"))}
    environment.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{environment['PATH']}", AWS_REGION="us-east-1",
                       CDK_DISABLE_CLI_TELEMETRY="true")
    result = subprocess.run([str(cli), "synth", "--quiet", "--no-notices", "--output", str(tmp_path)], cwd=ROOT,
                            env=environment, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Successfully synthesized" in result.stdout + result.stderr
    report = json.loads((tmp_path / "validation-report.json").read_text())["pluginReports"][0]
    assert report["conclusion"] == "success"
    assert (tmp_path / "VoiceAgent.template.json").is_file()
