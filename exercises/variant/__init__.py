"""Variants: a template drawn for a seed and validated — its values, the twins' values, the
mistake search that keeps each name unambiguous."""
