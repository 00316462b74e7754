package v1alpha1_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("LoggingBenchmark admission of the settings counted at the source", func() {
	DescribeTable(
		"rejects an invalid setting with a message saying what to change",
		func(specYAML, field, message string) {
			err := k8sClient.Create(ctx, newBenchmark(specYAML))
			Expect(err).To(HaveOccurred(), "the API server accepted the spec %s", specYAML)
			Expect(err.Error()).To(And(ContainSubstring(field), ContainSubstring(message)))
		},
		Entry("a statement sample rate above 1", `logging: {statementSampleRate: 1.5}`,
			"spec.logging.statementSampleRate", "should be less than or equal to 1"),
		Entry("a negative transaction sample rate", `logging: {transactionSampleRate: -0.1}`,
			"spec.logging.transactionSampleRate", "should be greater than or equal to 0"),
		Entry("minDurationSample below -1", `logging: {minDurationSample: -2}`,
			"spec.logging.minDurationSample", "should be greater than or equal to -1"),
		Entry("tempFiles below -1", `logging: {tempFiles: -2}`,
			"spec.logging.tempFiles", "should be greater than or equal to -1"),
		Entry("autoExplain without minDuration", `logging: {autoExplain: {analyze: true}}`,
			"spec.logging.autoExplain.minDuration", "Required value"),
		Entry("an auto_explain format PostgreSQL does not have", `logging: {autoExplain: {minDuration: 0, format: html}}`,
			"spec.logging.autoExplain.format", "Unsupported value"),
		Entry("an auto_explain sample rate above 1", `logging: {autoExplain: {minDuration: 0, sampleRate: 2}}`,
			"spec.logging.autoExplain.sampleRate", "should be less than or equal to 1"),
		Entry("a destination's statement sample rate above 1",
			`destinations: [{name: csv, type: CSVLog, logging: {statementSampleRate: 2}}]`,
			"spec.destinations[0].logging.statementSampleRate", "should be less than or equal to 1"),
		Entry("a sample rate as a postgres parameter", `postgres: {parameters: {log_statement_sample_rate: "0.1"}}`,
			"spec.postgres", "statementSampleRate"),
		Entry("a counter from an extension image without the image", `postgres: {counter: {source: ExtensionImage}}`,
			"spec.postgres.counter", "extensionImage is required with source ExtensionImage"),
		Entry("a counter from the operand image with an extension image",
			`postgres: {counter: {source: OperandImage, extensionImage: "ghcr.io/logbench/logbench-counter:18"}}`,
			"spec.postgres.counter", "extensionImage is required with source ExtensionImage, and only with it"),
		Entry("a counter from elsewhere", `postgres: {counter: {source: Sidecar}}`,
			"spec.postgres.counter.source", "Unsupported value"),
	)

	// The CRD takes them without a counter, for logbench run --local, which reads the
	// same CRD and loads the counter itself; in a cluster the admission policy and the
	// operator (ValidateForClusters) refuse them without spec.postgres.counter.
	DescribeTable(
		"accepts a valid setting",
		func(specYAML string) {
			Expect(k8sClient.Create(ctx, newBenchmark(specYAML))).To(Succeed())
		},
		Entry("every setting in spec.logging",
			`logging: {minDurationSample: 0, statementSampleRate: 0.01, transactionSampleRate: 1, lockWaits: true, `+
				`tempFiles: 0, autoExplain: {minDuration: 0, analyze: true, buffers: true, verbose: true, `+
				`nestedStatements: true, format: json, sampleRate: 0.5}}`),
		Entry("every setting in a destination's logging",
			`destinations: [{name: csv, type: CSVLog, logging: {minDurationSample: -1, statementSampleRate: 0, `+
				`transactionSampleRate: 0, lockWaits: false, tempFiles: -1, autoExplain: {minDuration: 250}}}]`),
		Entry("sampling with the counter from the operand image",
			`{postgres: {counter: {source: OperandImage}}, logging: {minDurationSample: 0, statementSampleRate: 0.1}}`),
		Entry("sampling with the counter from an extension image",
			`{postgres: {counter: {source: ExtensionImage, extensionImage: "ghcr.io/logbench/logbench-counter:18"}}, `+
				`logging: {minDurationSample: 0, statementSampleRate: 0.1}}`),
	)
})
