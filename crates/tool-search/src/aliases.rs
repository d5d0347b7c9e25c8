//! A small built-in table of tool vocabulary: English synonyms and their Italian, Spanish,
//! French, German and Portuguese equivalents, for the verbs and objects tools are named after.
//!
//! Why: lexical search cannot bridge `ticket` → `issue` or `invia` → `send` on its own, and
//! these few hundred words cover most of what models type. The table is general vocabulary
//! (what tools do and what they act on), never words picked from an evaluation set.
//!
//! Each row is one concept: English words, then words of other languages. A query word that
//! matches any member expands to the row's English words (which are what catalogs are written
//! in). English members match by English stem; other members match by their exact form, or —
//! when the word is unknown to the catalog — by the Snowball stem of their own language, so
//! `inviare`, `invia` and `inviato` all reach `send`.

use rustc_hash::FxHashMap;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

use super::analyzer::Analyzer;

/// (English words, words of other languages). Multi-word forms are not supported: every entry
/// is one word.
const ROWS: &[(&[&str], &[&str])] = &[
    // --- verbs ---
    (
        &["send", "submit", "dispatch"],
        &[
            "invia",
            "inviare",
            "manda",
            "mandare",
            "spedisci",
            "spedire",
            "enviar",
            "envia",
            "envie",
            "envoyer",
            "envoie",
            "envoi",
            "senden",
            "sende",
            "schicken",
            "schicke",
            "verschicken",
            "mandar",
        ],
    ),
    (
        &["create", "make", "new", "add"],
        &[
            "crea",
            "creare",
            "nuovo",
            "nuova",
            "aggiungi",
            "aggiungere",
            "crear",
            "nuevo",
            "nueva",
            "agregar",
            "añadir",
            "créer",
            "creer",
            "crée",
            "nouveau",
            "nouvelle",
            "ajouter",
            "erstellen",
            "erstelle",
            "anlegen",
            "neu",
            "neue",
            "hinzufügen",
            "criar",
            "novo",
            "adicionar",
        ],
    ),
    (
        &["delete", "remove", "erase", "destroy"],
        &[
            "elimina",
            "eliminare",
            "cancella",
            "cancellare",
            "rimuovi",
            "rimuovere",
            "eliminar",
            "borrar",
            "borra",
            "quitar",
            "supprimer",
            "supprime",
            "effacer",
            "retirer",
            "löschen",
            "lösche",
            "entfernen",
            "entferne",
            "excluir",
            "apagar",
            "remover",
        ],
    ),
    (
        &["update", "edit", "modify", "change", "patch"],
        &[
            "aggiorna",
            "aggiornare",
            "modifica",
            "modificare",
            "cambia",
            "cambiare",
            "actualizar",
            "actualiza",
            "editar",
            "modificar",
            "cambiar",
            "mettre",
            "modifier",
            "changer",
            "éditer",
            "aktualisieren",
            "aktualisiere",
            "ändern",
            "ändere",
            "bearbeiten",
            "bearbeite",
            "atualizar",
            "alterar",
        ],
    ),
    (
        &["get", "retrieve", "fetch", "read", "show", "view", "obtain"],
        &[
            "ottieni",
            "ottenere",
            "leggi",
            "leggere",
            "mostra",
            "mostrare",
            "recupera",
            "recuperare",
            "visualizza",
            "obtener",
            "obtén",
            "leer",
            "muestra",
            "mostrar",
            "obtenir",
            "lire",
            "afficher",
            "voir",
            "récupérer",
            "holen",
            "lesen",
            "anzeigen",
            "zeige",
            "zeigen",
            "abrufen",
            "obter",
            "ler",
        ],
    ),
    (
        &["list", "enumerate"],
        &[
            "elenca",
            "elencare",
            "elenco",
            "lista",
            "liste",
            "listar",
            "enumerar",
            "lister",
            "auflisten",
        ],
    ),
    (
        &["search", "find", "lookup", "query", "look"],
        &[
            "cerca",
            "cercare",
            "trova",
            "trovare",
            "ricerca",
            "buscar",
            "busca",
            "encontrar",
            "búsqueda",
            "chercher",
            "cherche",
            "recherche",
            "rechercher",
            "trouver",
            "suchen",
            "suche",
            "finden",
            "finde",
            "procurar",
            "pesquisar",
        ],
    ),
    (
        &["open", "launch"],
        &["apri", "aprire", "abrir", "abre", "ouvrir", "ouvre", "öffnen", "öffne"],
    ),
    (
        &["close", "shut"],
        &[
            "chiudi",
            "chiudere",
            "cerrar",
            "cierra",
            "fermer",
            "ferme",
            "schließen",
            "schließe",
            "fechar",
        ],
    ),
    (
        &["upload", "attach"],
        &[
            "carica",
            "caricare",
            "subir",
            "sube",
            "téléverser",
            "hochladen",
            "allega",
            "adjuntar",
            "joindre",
            "anhängen",
            "anexar",
        ],
    ),
    (
        &["download", "export", "save"],
        &[
            "scarica",
            "scaricare",
            "salva",
            "salvare",
            "esporta",
            "descargar",
            "descarga",
            "guardar",
            "exportar",
            "télécharger",
            "enregistrer",
            "sauvegarder",
            "exporter",
            "herunterladen",
            "speichern",
            "speichere",
            "exportieren",
            "baixar",
            "salvar",
        ],
    ),
    (
        &["move", "transfer", "relocate"],
        &[
            "sposta",
            "spostare",
            "mover",
            "mueve",
            "déplacer",
            "verschieben",
            "verschiebe",
        ],
    ),
    (
        &["copy", "duplicate", "clone"],
        &["copia", "copiare", "duplica", "copiar", "copier", "kopieren", "kopiere"],
    ),
    (
        &["rename"],
        &[
            "rinomina",
            "rinominare",
            "renombrar",
            "renommer",
            "umbenennen",
            "renomear",
        ],
    ),
    (
        &["run", "execute", "invoke", "trigger"],
        &[
            "esegui",
            "eseguire",
            "lancia",
            "ejecutar",
            "ejecuta",
            "exécuter",
            "lancer",
            "ausführen",
            "führe",
            "starte",
            "executar",
        ],
    ),
    (
        &["start", "begin"],
        &[
            "avvia",
            "avviare",
            "inizia",
            "iniziare",
            "iniciar",
            "comenzar",
            "démarrer",
            "commencer",
            "starten",
            "beginnen",
        ],
    ),
    (
        &["stop", "halt", "pause"],
        &[
            "ferma",
            "fermare",
            "interrompi",
            "detener",
            "parar",
            "arrêter",
            "arrête",
            "stoppen",
            "anhalten",
            "beenden",
        ],
    ),
    (
        &["cancel", "abort", "revoke"],
        &[
            "annulla",
            "annullare",
            "cancelar",
            "annuler",
            "abbrechen",
            "stornieren",
            "absagen",
        ],
    ),
    (
        &["schedule", "book", "reserve", "plan"],
        &[
            "pianifica",
            "programma",
            "prenota",
            "prenotare",
            "programar",
            "agendar",
            "reservar",
            "planifier",
            "programmer",
            "réserver",
            "planen",
            "buchen",
            "reservieren",
            "einplanen",
        ],
    ),
    (
        &["reply", "respond", "answer"],
        &[
            "rispondi",
            "rispondere",
            "responder",
            "responde",
            "répondre",
            "réponds",
            "antworten",
            "antworte",
            "beantworten",
        ],
    ),
    (
        &["forward"],
        &[
            "inoltra",
            "inoltrare",
            "reenviar",
            "transférer",
            "weiterleiten",
            "encaminhar",
        ],
    ),
    (
        &["share", "invite", "grant"],
        &[
            "condividi",
            "condividere",
            "invita",
            "compartir",
            "comparte",
            "invitar",
            "partager",
            "inviter",
            "teilen",
            "freigeben",
            "einladen",
            "compartilhar",
            "convidar",
        ],
    ),
    (
        &["archive"],
        &["archivia", "archiviare", "archivar", "archiver", "archivieren"],
    ),
    (
        &["mark", "flag", "label", "tag"],
        &[
            "segna",
            "contrassegna",
            "etichetta",
            "marcar",
            "etiqueta",
            "marquer",
            "étiquette",
            "markieren",
            "markiere",
            "kennzeichnen",
            "etikett",
        ],
    ),
    (
        &["write", "compose", "draft"],
        &[
            "scrivi",
            "scrivere",
            "componi",
            "bozza",
            "escribir",
            "escribe",
            "redactar",
            "borrador",
            "écrire",
            "écris",
            "rédiger",
            "brouillon",
            "schreiben",
            "schreibe",
            "verfassen",
            "entwurf",
            "escrever",
            "rascunho",
        ],
    ),
    (
        &["publish", "post"],
        &[
            "pubblica",
            "pubblicare",
            "publicar",
            "publica",
            "publier",
            "veröffentlichen",
            "posten",
        ],
    ),
    (
        &["assign"],
        &[
            "assegna",
            "assegnare",
            "asignar",
            "assigner",
            "attribuer",
            "zuweisen",
            "atribuir",
        ],
    ),
    (
        &["merge", "combine"],
        &["unisci", "fusionar", "combinar", "fusionner", "zusammenführen"],
    ),
    (
        &["deploy", "release"],
        &[
            "distribuisci",
            "rilascia",
            "desplegar",
            "déployer",
            "bereitstellen",
            "implantar",
        ],
    ),
    (
        &["restart", "reboot", "reload"],
        &["riavvia", "riavviare", "reiniciar", "redémarrer", "neustarten"],
    ),
    (
        &["convert", "transform", "translate"],
        &[
            "converti",
            "convertire",
            "traduci",
            "convertir",
            "traducir",
            "traduire",
            "konvertieren",
            "umwandeln",
            "übersetzen",
            "converter",
            "traduzir",
        ],
    ),
    (
        &["calculate", "compute", "count"],
        &[
            "calcola",
            "calcolare",
            "calcular",
            "calculer",
            "compter",
            "berechnen",
            "berechne",
            "zählen",
        ],
    ),
    (
        &["summarize", "summary", "overview"],
        &[
            "riassumi",
            "riassunto",
            "resumir",
            "resumen",
            "résumer",
            "résumé",
            "zusammenfassen",
            "zusammenfassung",
            "resumo",
        ],
    ),
    (
        &["navigate", "go", "visit", "browse"],
        &[
            "naviga",
            "navigare",
            "visita",
            "navegar",
            "naviguer",
            "aller",
            "visiter",
            "navigieren",
            "besuchen",
            "gehe",
        ],
    ),
    (
        &["click", "press", "tap"],
        &[
            "clicca", "cliccare", "premi", "pulsa", "pulsar", "cliquer", "clique", "appuyer", "klicken", "klicke",
            "drücken", "clicar",
        ],
    ),
    (
        &["type", "fill", "enter"],
        &[
            "digita",
            "scrivi",
            "compila",
            "escribe",
            "rellenar",
            "teclear",
            "taper",
            "saisir",
            "remplir",
            "tippen",
            "eingeben",
            "ausfüllen",
            "preencher",
            "digitar",
        ],
    ),
    (
        &["screenshot", "snapshot"],
        &["cattura", "istantanea", "captura", "capturer", "bildschirmfoto"],
    ),
    (
        &["log", "record", "track"],
        &[
            "registra",
            "registrare",
            "registrar",
            "enregistrer",
            "protokollieren",
            "erfassen",
        ],
    ),
    (
        &["login", "authenticate", "signin", "auth"],
        &[
            "accedi",
            "accedere",
            "autentica",
            "iniciar",
            "acceder",
            "connecter",
            "anmelden",
            "einloggen",
            "entrar",
        ],
    ),
    (
        &["subscribe", "watch", "follow", "monitor"],
        &[
            "iscriviti",
            "monitora",
            "segui",
            "suscribir",
            "seguir",
            "monitorear",
            "abonner",
            "suivre",
            "surveiller",
            "abonnieren",
            "folgen",
            "überwachen",
        ],
    ),
    (
        &["check", "verify", "validate"],
        &[
            "controlla",
            "verifica",
            "verificare",
            "comprobar",
            "revisar",
            "vérifier",
            "prüfen",
            "prüfe",
            "überprüfen",
            "checar",
        ],
    ),
    // --- objects ---
    (
        &["email", "mail", "gmail"],
        &[
            "posta",
            "correo",
            "courriel",
            "courrier",
            "correio",
            "postfach",
            "posteingang",
            "casella",
        ],
    ),
    (
        &["message", "chat", "dm"],
        &[
            "messaggio",
            "messaggi",
            "mensaje",
            "mensajes",
            "nachricht",
            "nachrichten",
            "mensagem",
            "mensagens",
        ],
    ),
    (
        &["event", "meeting", "appointment", "calendar"],
        &[
            "evento",
            "eventi",
            "riunione",
            "appuntamento",
            "calendario",
            "eventos",
            "reunión",
            "reunion",
            "cita",
            "événement",
            "évènement",
            "rendez",
            "réunion",
            "calendrier",
            "ereignis",
            "termin",
            "besprechung",
            "treffen",
            "kalender",
            "reunião",
            "compromisso",
        ],
    ),
    (
        &["issue", "ticket", "bug", "incident"],
        &[
            "segnalazione",
            "errore",
            "incidencia",
            "problème",
            "bogue",
            "fehler",
            "vorgang",
            "chamado",
        ],
    ),
    (&["repository", "repo"], &["repositorio", "dépôt", "repositório"]),
    (
        &["file", "document", "doc"],
        &[
            "documento",
            "documenti",
            "archivo",
            "archivos",
            "fichier",
            "fichiers",
            "datei",
            "dateien",
            "dokument",
            "arquivo",
        ],
    ),
    (
        &["directory", "folder", "dir"],
        &[
            "cartella",
            "carpeta",
            "dossier",
            "répertoire",
            "ordner",
            "verzeichnis",
            "diretório",
        ],
    ),
    (
        &["page", "webpage", "website", "site", "url", "link"],
        &[
            "pagina",
            "sito",
            "página",
            "sitio",
            "enlace",
            "enlaces",
            "seite",
            "webseite",
            "collegamento",
        ],
    ),
    (
        &["user", "member", "person", "people", "account", "profile"],
        &[
            "utente",
            "utenti",
            "usuario",
            "usuarios",
            "cuenta",
            "perfil",
            "utilisateur",
            "compte",
            "profil",
            "benutzer",
            "nutzer",
            "konto",
            "usuário",
            "conta",
        ],
    ),
    (
        &["customer", "lead"],
        &[
            "contatto", "contatti", "cliente", "contacto", "kontakt", "kunde", "contato",
        ],
    ),
    (
        &["channel", "room", "group"],
        &[
            "canale", "stanza", "gruppo", "grupo", "groupe", "kanal", "raum", "gruppe",
        ],
    ),
    (
        &["notebook", "memo"],
        &[
            "nota",
            "appunti",
            "taccuino",
            "apunte",
            "cuaderno",
            "carnet",
            "notiz",
            "notizen",
            "notizbuch",
            "anotação",
            "caderno",
        ],
    ),
    (
        &["task", "todo", "job", "assignment"],
        &[
            "compito",
            "attività",
            "tarea",
            "tareas",
            "tâche",
            "tâches",
            "aufgabe",
            "aufgaben",
            "tarefa",
        ],
    ),
    (
        &["comment", "review", "feedback"],
        &[
            "commento",
            "commenti",
            "comentario",
            "comentarios",
            "commentaire",
            "kommentar",
            "comentário",
        ],
    ),
    (
        &["image", "picture", "photo", "png", "jpg"],
        &["immagine", "imagen", "imagem", "bilder"],
    ),
    (&["video", "movie", "film"], &["filmato", "película", "vidéo", "filme"]),
    (
        &["location", "place", "address", "map", "geocode", "coordinates"],
        &[
            "luogo",
            "posizione",
            "indirizzo",
            "mappa",
            "lugar",
            "ubicación",
            "dirección",
            "mapa",
            "lieu",
            "adresse",
            "standort",
            "karte",
            "endereço",
            "localização",
        ],
    ),
    (
        &["time", "date", "timezone", "clock"],
        &["orario", "hora", "fecha", "heure", "uhrzeit", "datum", "zeit"],
    ),
    (
        &["weather", "forecast", "temperature"],
        &[
            "meteo",
            "previsioni",
            "clima",
            "tiempo",
            "pronóstico",
            "météo",
            "wetter",
            "vorhersage",
            "previsão",
        ],
    ),
    (
        &["price", "cost", "quote", "rate"],
        &[
            "prezzo", "costo", "precio", "prix", "coût", "preis", "kosten", "preço", "custo",
        ],
    ),
    (
        &["stock", "equity", "ticker"],
        &[
            "azione", "azioni", "acción", "acciones", "aktie", "aktien", "ação", "ações",
        ],
    ),
    (
        &["payment", "invoice", "bill", "charge"],
        &[
            "pagamento",
            "fattura",
            "pago",
            "factura",
            "paiement",
            "facture",
            "zahlung",
            "rechnung",
            "fatura",
        ],
    ),
    (
        &["news", "headline"],
        &[
            "notizie",
            "notizia",
            "articolo",
            "noticias",
            "noticia",
            "artículo",
            "nouvelles",
            "actualités",
            "nachrichten",
            "artikel",
            "notícias",
        ],
    ),
    (
        &["workout", "exercise", "fitness"],
        &[
            "allenamento",
            "esercizio",
            "esercizi",
            "entrenamiento",
            "ejercicio",
            "ejercicios",
            "entraînement",
            "exercice",
            "übung",
            "übungen",
            "treino",
            "exercício",
        ],
    ),
    (
        &["recipe", "meal", "food", "nutrition", "ingredient"],
        &[
            "ricetta",
            "pasto",
            "cibo",
            "receta",
            "comida",
            "recette",
            "repas",
            "nourriture",
            "rezept",
            "mahlzeit",
            "essen",
            "receita",
            "refeição",
        ],
    ),
    (
        &["notification", "alert", "alarm", "reminder"],
        &[
            "notifica",
            "avviso",
            "promemoria",
            "notificación",
            "alerta",
            "recordatorio",
            "alerte",
            "rappel",
            "benachrichtigung",
            "warnung",
            "erinnerung",
            "notificação",
            "lembrete",
        ],
    ),
    (
        &["table", "database", "spreadsheet", "sheet", "row", "record"],
        &[
            "tabella",
            "foglio",
            "tabla",
            "hoja",
            "tableau",
            "feuille",
            "tabelle",
            "datenbank",
            "planilha",
        ],
    ),
    (
        &["password", "secret", "credential"],
        &[
            "chiave",
            "segreto",
            "contraseña",
            "clave",
            "passwort",
            "schlüssel",
            "senha",
        ],
    ),
    (&["weight"], &["peso", "poids", "gewicht"]),
    (
        &["song", "music", "track", "playlist", "audio"],
        &[
            "canzone", "musica", "canción", "música", "chanson", "musique", "lied", "musik",
        ],
    ),
    (
        &["flight", "airport", "airline"],
        &["volo", "voli", "vuelo", "vuelos", "vols", "flug", "flüge", "voo"],
    ),
    (
        &["hotel", "accommodation", "lodging"],
        &["albergo", "alojamiento", "hébergement", "unterkunft", "hospedagem"],
    ),
    (&["web", "internet", "online"], &["rete", "toile", "netz"]),
    (
        &["paper", "publication", "research"],
        &[
            "articolo",
            "ricerca",
            "investigación",
            "recherche",
            "forschung",
            "pesquisa",
        ],
    ),
    // --- topics: what a request is about → the words tools use for it ---
    (
        &[
            "travel",
            "trip",
            "journey",
            "vacation",
            "holiday",
            "tour",
            "destination",
        ],
        &[
            "viaggio",
            "vacanza",
            "viaje",
            "vacaciones",
            "voyage",
            "vacances",
            "reise",
            "urlaub",
            "viagem",
            "férias",
        ],
    ),
    (
        &["cook", "cooking", "dish", "cuisine", "dinner", "lunch", "breakfast"],
        &[
            "cucina",
            "cucinare",
            "cena",
            "pranzo",
            "cocina",
            "cocinar",
            "almuerzo",
            "cuisiner",
            "dîner",
            "déjeuner",
            "kochen",
            "abendessen",
            "mittagessen",
            "cozinhar",
            "jantar",
            "almoço",
        ],
    ),
    (
        &[
            "sport",
            "sports",
            "game",
            "match",
            "team",
            "league",
            "tournament",
            "score",
        ],
        &[
            "partita",
            "squadra",
            "campionato",
            "partido",
            "equipo",
            "liga",
            "torneo",
            "équipe",
            "spiel",
            "mannschaft",
            "turnier",
            "jogo",
            "time",
        ],
    ),
    (
        &["shop", "shopping", "buy", "purchase", "product", "store", "order"],
        &[
            "acquista",
            "comprare",
            "negozio",
            "prodotto",
            "ordine",
            "comprar",
            "tienda",
            "producto",
            "pedido",
            "acheter",
            "magasin",
            "produit",
            "commande",
            "kaufen",
            "laden",
            "produkt",
            "bestellung",
            "loja",
            "produto",
        ],
    ),
    (
        &["money", "currency", "exchange", "convert"],
        &[
            "valuta", "cambio", "moneda", "divisa", "devise", "monnaie", "währung", "geld", "moeda", "câmbio",
        ],
    ),
    (
        &["crypto", "cryptocurrency", "bitcoin", "coin", "token", "blockchain"],
        &["criptovaluta", "criptomoneda", "kryptowährung", "criptomoeda"],
    ),
    (
        &["city", "town", "country", "region", "place"],
        &[
            "città", "paese", "ciudad", "país", "ville", "pays", "stadt", "land", "cidade",
        ],
    ),
    (
        &["translate", "translation", "language"],
        &[
            "traduzione",
            "lingua",
            "traducción",
            "idioma",
            "traduction",
            "langue",
            "übersetzung",
            "sprache",
            "tradução",
        ],
    ),
    (
        &["health", "medical", "doctor", "medicine", "disease"],
        &[
            "salute",
            "medico",
            "salud",
            "médico",
            "santé",
            "médecin",
            "gesundheit",
            "arzt",
            "saúde",
        ],
    ),
];

/// One-way links: an instance or a narrower word → the broader words tools are described
/// with (`french` → `language`, `usd` → `currency`, `tomorrow` → `date`), never back.
const ONE_WAY: &[(&[&str], &[&str])] = &[
    (&["email", "mail", "e-mail", "inbox"], &["message"]),
    (
        &[
            "english",
            "french",
            "german",
            "spanish",
            "italian",
            "portuguese",
            "chinese",
            "japanese",
            "korean",
            "russian",
            "arabic",
            "hindi",
            "dutch",
            "turkish",
            "polish",
        ],
        &["language", "translate"],
    ),
    (
        &[
            "usd", "eur", "gbp", "jpy", "cny", "chf", "cad", "aud", "inr", "dollar", "dollars", "euro", "euros",
            "pound", "yen", "yuan", "rupee",
        ],
        &["currency", "exchange"],
    ),
    (
        &[
            "today",
            "tomorrow",
            "yesterday",
            "tonight",
            "weekend",
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
            "saturday",
            "sunday",
            "january",
            "february",
            "march",
            "april",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        &["date", "day"],
    ),
    (&["btc", "eth", "bitcoin", "ethereum"], &["crypto", "cryptocurrency"]),
];

/// Languages whose Snowball stems are tried for words the catalog does not know.
const FOREIGN: [Algorithm; 5] = [
    Algorithm::Italian,
    Algorithm::Spanish,
    Algorithm::French,
    Algorithm::German,
    Algorithm::Portuguese,
];

/// Where a query word found its alias row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AliasMatch {
    /// An English synonym (by stem) or a foreign word spelt exactly as in the table.
    Exact,
    /// A foreign word matched by its own language's stem.
    ForeignStem,
}

/// Compiled lookup tables, built once per process.
pub struct AliasTable {
    /// English stem → rows.
    english: FxHashMap<String, Vec<usize>>,
    /// Exact foreign form → rows.
    foreign_exact: FxHashMap<String, Vec<usize>>,
    /// (language, stem) → rows.
    foreign_stem: Vec<FxHashMap<String, Vec<usize>>>,
    stemmers: Vec<Stemmer>,
    /// English stems of each row's English words.
    targets: Vec<Vec<String>>,
}

/// The process-wide table.
pub fn table() -> &'static AliasTable {
    static TABLE: OnceLock<AliasTable> = OnceLock::new();
    TABLE.get_or_init(AliasTable::build)
}

impl AliasTable {
    fn build() -> AliasTable {
        let analyzer = Analyzer::default();
        let stemmers: Vec<Stemmer> = FOREIGN.iter().map(|a| Stemmer::create(*a)).collect();
        let mut english: FxHashMap<String, Vec<usize>> = FxHashMap::default();
        let mut foreign_exact: FxHashMap<String, Vec<usize>> = FxHashMap::default();
        let mut foreign_stem: Vec<FxHashMap<String, Vec<usize>>> =
            FOREIGN.iter().map(|_| FxHashMap::default()).collect();
        let mut targets = Vec::with_capacity(ROWS.len());
        for (row, (en, other)) in ROWS.iter().enumerate() {
            let mut t: Vec<String> = en.iter().map(|w| analyzer.stem(w)).collect();
            t.dedup();
            for s in &t {
                push_unique(english.entry(s.clone()).or_default(), row);
            }
            targets.push(t);
            for w in other.iter() {
                push_unique(foreign_exact.entry(w.to_string()).or_default(), row);
                for (i, st) in stemmers.iter().enumerate() {
                    let s = st.stem(w);
                    if s.chars().count() >= 4 {
                        push_unique(foreign_stem[i].entry(s.into_owned()).or_default(), row);
                    }
                }
            }
        }
        for (keys, to) in ONE_WAY {
            let row = targets.len();
            let mut t: Vec<String> = to.iter().map(|w| analyzer.stem(w)).collect();
            t.dedup();
            targets.push(t);
            for k in keys.iter() {
                push_unique(english.entry(analyzer.stem(k)).or_default(), row);
            }
        }
        AliasTable {
            english,
            foreign_exact,
            foreign_stem,
            stemmers,
            targets,
        }
    }

    /// English target stems for a lower-case query `word` whose English stem is `stem`.
    /// `known` says whether the catalog has `stem`: only unknown words try foreign stems.
    pub fn lookup(&self, word: &str, stem: &str, known: bool) -> Vec<(String, AliasMatch)> {
        let mut rows: Vec<(usize, AliasMatch)> = Vec::new();
        let add = |rows: &mut Vec<(usize, AliasMatch)>, r: &[usize], m: AliasMatch| {
            for &row in r {
                if !rows.iter().any(|(x, _)| *x == row) {
                    rows.push((row, m));
                }
            }
        };
        if let Some(r) = self.english.get(stem) {
            add(&mut rows, r, AliasMatch::Exact);
        }
        if known {
            // a word the catalog uses is read as English (`data`, `note`, `post` ...)
        } else if let Some(r) = self.foreign_exact.get(word) {
            add(&mut rows, r, AliasMatch::Exact);
        } else if rows.is_empty() && word.chars().count() >= 4 {
            for (i, st) in self.stemmers.iter().enumerate() {
                if let Some(r) = self.foreign_stem[i].get(st.stem(word).as_ref()) {
                    add(&mut rows, r, AliasMatch::ForeignStem);
                }
            }
        }
        let mut out: Vec<(String, AliasMatch)> = Vec::new();
        for (row, m) in rows {
            for t in &self.targets[row] {
                if t != stem && !out.iter().any(|(x, _)| x == t) {
                    out.push((t.clone(), m));
                }
            }
        }
        out
    }
}

fn push_unique(v: &mut Vec<usize>, x: usize) {
    if !v.contains(&x) {
        v.push(x);
    }
}
