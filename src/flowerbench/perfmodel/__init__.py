"""The performance model: its terms (the `terms` stage and its probes, the terms file), the CPU and
GPU forms (defined once), the judging of its predictions, the held-out settings (predict, validate),
the k-steps what-if and the blog explained.  Outside it only the report and the command modules
import it; the terms stage runs only terms, probes and termsfile of it."""
