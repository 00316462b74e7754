{{/*
logbench.fullname is the prefix of every object's name: the release name, with the chart
name appended unless the release name holds it already, cut to the 63 characters a
label value allows.
*/}}
{{- define "logbench.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "logbench.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* logbench.selectorLabels are the labels the Deployment and Service select pods by. */}}
{{- define "logbench.selectorLabels" -}}
app.kubernetes.io/name: {{ include "logbench.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "logbench.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "logbench.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "logbench.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "logbench.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name must name an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
logbench.image is the image reference: repository@digest when image.digest is set (as
cert-manager's chart does), repository:tag otherwise, the tag defaulting to appVersion.
*/}}
{{- define "logbench.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* logbench.labelPairs writes a map of labels as key=value pairs, comma-separated. */}}
{{- define "logbench.labelPairs" -}}
{{- $pairs := list -}}
{{- range $key, $value := . -}}
{{- $pairs = append $pairs (printf "%s=%s" $key $value) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{/* logbench.imagePullSecretNames joins the names of imagePullSecrets with commas. */}}
{{- define "logbench.imagePullSecretNames" -}}
{{- $names := list -}}
{{- range .Values.imagePullSecrets -}}
{{- $names = append $names .name -}}
{{- end -}}
{{- join "," $names -}}
{{- end -}}

{{/*
logbench.allowlists are what the admission policy and the operator both enforce (each
checks them: internal/allowlist), as a JSON object keyed by the names of the policy's
variables. An image prefix must end in /, : or @, so that it cannot match another
repository, registry or tag: values.schema.json says so, and this fails the template
also where the schema is skipped.
*/}}
{{- define "logbench.allowlists" -}}
{{- range .Values.allowedImages -}}
{{- if not (regexMatch "^[A-Za-z0-9][A-Za-z0-9._/:@-]*[/:@]$" .) -}}
{{- fail (printf "allowedImages: %q must end in /, : or @ and hold only the characters of an image reference" .) -}}
{{- end -}}
{{- end -}}
{{- $placement := .Values.placement | default dict -}}
{{- dict
  "allowedImagePrefixes" (.Values.allowedImages | default list)
  "allowedTolerations" ($placement.allowedTolerations | default list)
  "allowedNodeSelectors" ($placement.allowedNodeSelectors | default list)
  "allowedStorageClasses" ($placement.allowedStorageClasses | default list)
  | toJson -}}
{{- end -}}
