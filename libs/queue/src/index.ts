export * from './create-links.job';
